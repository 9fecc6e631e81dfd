"""While a fresh start runs in the service, writes wait, and the dashboard says so (issue 22,
audit gap 5; decision 439).

The reset is held in its `compress` stage by a real git ``pre-receive`` hook on the knowledge
repo's bare origin, which waits for a file: the test looks while it is provably running.
"""

from __future__ import annotations

import json
import stat
import subprocess
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from nika_tui.dashboard.redis_source import RedisDashboardSource
from nika_tui.domain import protocol_requests as req
from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RememberRequest
from nika_tui.services import redis_keys
from nika_tui.services.config_store import load_tenant, save_tenant
from tests.engine.reset_kill import journal
from tests.engine.strategy_a_seed import seed_history
from tests.helpers import retry_until
from tests.plugins.memory import RunningService

pytestmark = pytest.mark.embedder
TENANT, OTHER = "acme", "beta"


def _held_remote(tmp_path: Path) -> tuple[Path, Path]:
    """A bare origin whose pushes wait until ``release`` exists (its hook marks ``holding``)."""
    bare = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    release, holding = tmp_path / "release", tmp_path / "holding"
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(
        f"#!/bin/sh\ntouch {holding}\nwhile [ ! -e {release} ]; do sleep 0.05; done\nexit 0\n"
    )
    hook.chmod(stat.S_IRWXU)
    return bare, release


def test_a_running_reset_is_shown_and_writes_resume_after_it(
    running_service: RunningService,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    svc = running_service
    make_tenant(TENANT)
    make_tenant(OTHER)
    bare, release = _held_remote(tmp_path)
    work = tmp_path / "knowledge"
    subprocess.run(["git", "clone", "-q", str(bare), str(work)], check=True, capture_output=True)
    save_tenant(load_tenant(TENANT).model_copy(update={"knowledge_repo": str(work)}))
    seed_history(svc.ctx, TENANT)
    source = RedisDashboardSource()  # on REDIS_URL, the service's Redis
    assert not [p for p in source.snapshot(datetime.now(UTC)).problems if "paused" in p]

    done: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: done.update(
        svc.client.send(req.CompressResetRequest(TENANT, None), timeout=600).report
    ))  # fmt: skip
    thread.start()
    try:
        retry_until((tmp_path / "holding").exists, timeout=120, what="the push held by the hook")
        assert journal(TENANT)["stage"] == "compress" and thread.is_alive()
        mark = json.loads(str(svc.ctx.redis.get(redis_keys.WRITES_PAUSED)))
        assert (mark["op"], mark["tenant_id"], mark["stage"]) == ("compress.reset", TENANT,
                                                                  "compress")  # fmt: skip
        problems = source.snapshot(datetime.now(UTC)).problems
        line = next(p for p in problems if p.startswith("memory writes paused"))
        assert f"reset of {TENANT} running (stage compress" in line and "nothing is lost" in line
        # Another tenant writes meanwhile: durable in the stream, stored once the reset ends.
        key = svc.client.remember(RememberRequest(
            tenant_id=OTHER, text="The beta build runs on Fridays",
            meta=NikaMeta(timestamp=datetime.now(UTC), project_id="beta"),
        ))  # fmt: skip
    finally:
        release.touch()
        thread.join(timeout=600)
    assert done["generation"] and journal(TENANT)["stage"] == "done"
    assert svc.client.wait_ingested(OTHER, key, timeout=60)["id"]
    assert svc.ctx.redis.get(redis_keys.WRITES_PAUSED) is None
    assert not [p for p in source.snapshot(datetime.now(UTC)).problems if "paused" in p]
