"""While a fresh start of one tenant runs in the service, only that tenant's writes wait; every
other tenant's are stored meanwhile, and the dashboard says so (issue 22; decisions 439, 505).

The reset is held in its `compress` stage by a real git ``pre-receive`` hook on the knowledge
repo's bare origin, which waits for a file: the test looks while it is provably running.
"""

from __future__ import annotations

import json
import subprocess
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from nika_tui.dashboard.redis_source import RedisDashboardSource
from nika_tui.domain import protocol_requests as req
from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RecallQuery, RememberRequest
from nika_tui.errors import ShardBusy
from nika_tui.services import redis_keys
from nika_tui.services.config_store import load_tenant, save_tenant
from nika_tui.settings import Settings
from tests.engine.held_push import held_remote
from tests.engine.reset_kill import journal
from tests.engine.strategy_a_seed import seed_history
from tests.helpers import retry_until
from tests.plugins.memory import RunningService

pytestmark = pytest.mark.embedder
TENANT, OTHER = "acme", "beta"
OTHER_FACT = "The beta build runs on Fridays"
HELD_FACT = "The acme staging database moved to host db-staging-7"


def _remember(svc: RunningService, tenant_id: str, text: str) -> str:
    return svc.client.remember(RememberRequest(
        tenant_id=tenant_id, text=text,
        meta=NikaMeta(timestamp=datetime.now(UTC), project_id=tenant_id),
    ))  # fmt: skip


def _found(svc: RunningService, tenant_id: str, text: str) -> int:
    """How many of the tenant's current memories recall finds with exactly ``text``."""
    hits = svc.client.recall(RecallQuery(tenant_id=tenant_id, query=text, limit=10)).hits
    return sum(h.record.text == text for h in hits)


def test_a_reset_holds_only_its_tenant_and_is_shown(
    running_service: RunningService,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    svc = running_service
    make_tenant(TENANT)
    make_tenant(OTHER)
    bare, release = held_remote(tmp_path)
    work = tmp_path / "knowledge"
    subprocess.run(["git", "clone", "-q", str(bare), str(work)], check=True, capture_output=True)
    save_tenant(load_tenant(TENANT).model_copy(update={"knowledge_repo": str(work)}))
    seed_history(svc.ctx, TENANT)
    source = RedisDashboardSource(Settings.from_env())  # on REDIS_URL, the service's Redis
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
        line = next(p for p in problems if p.startswith("memory writes of"))
        assert line.startswith(f"memory writes of {TENANT} paused: reset running (stage compress")
        assert "nothing is lost" in line and "other tenants' writes go on" in line
        # The reset's tenant writes: its entry waits in the stream; a write RPC is refused.
        held_key = _remember(svc, TENANT, HELD_FACT)
        with pytest.raises(ShardBusy, match=f"memory writes of {TENANT} paused"):
            svc.client.send(req.MemoryRetireRequest(TENANT, "any-id", None))
        # Another tenant writes after it: stored and recalled while the reset is still held.
        other_key = _remember(svc, OTHER, OTHER_FACT)
        assert svc.client.wait_ingested(OTHER, other_key, timeout=60)["id"]
        assert _found(svc, OTHER, OTHER_FACT) == 1
        # The stream is read in order: the held entry came before, and is still not stored.
        assert svc.ctx.redis.llen(redis_keys.ingest_done(TENANT, held_key)) == 0
        assert thread.is_alive() and journal(TENANT)["stage"] == "compress"
    finally:
        release.touch()
        thread.join(timeout=600)
    assert done["generation"] and journal(TENANT)["stage"] == "done"
    # After the switch the held write is stored once, in the new generation.
    assert svc.client.wait_ingested(TENANT, held_key, timeout=120)["id"]
    assert _found(svc, TENANT, HELD_FACT) == 1
    assert svc.ctx.redis.get(redis_keys.WRITES_PAUSED) is None
    assert not [p for p in source.snapshot(datetime.now(UTC)).problems if "paused" in p]
