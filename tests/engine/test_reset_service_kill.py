"""kill -9 of a real `nika serve` while it resets one tenant: nothing acknowledged is lost, the
old store stays live, the held write is stored once at the restart (issue 22, decision 505).

The reset is held inside its ``compress`` stage by a real git ``pre-receive`` hook; meanwhile
another tenant's write is stored (the service is not blocked) and the reset tenant's write waits
in the stream. The service is then killed inside that stage (``tests/engine/reset_kill.py``:
frozen, the journal read again, killed) and started again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.protocol_requests import CompressResetRequest
from nika_tui.domain.requests import RecallQuery, RememberRequest
from nika_tui.engine.context import EngineContext
from nika_tui.errors import NikaError
from nika_tui.paths import data_dir
from nika_tui.services import redis_keys
from nika_tui.services.config_store import load_tenant, save_tenant
from nika_tui.services.memory_client import MemoryClient
from nika_tui.services.vectors.edge import EdgeVectorStore
from nika_tui.settings import Settings
from tests.engine.held_push import held_remote
from tests.engine.reset_kill import journal, kill_inside
from tests.engine.strategy_a_seed import seed_history
from tests.helpers import retry_until

pytestmark = [pytest.mark.embedder, pytest.mark.slow]
TENANT, OTHER = "acme", "beta"
HELD_FACT = "The acme staging database moved to host db-staging-7"
OTHER_FACT = "The beta build runs on Fridays"


def _serve(log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, NIKA_KERNEL_WATCH_S="0", NIKA_NO_AUTOSTART="1")
    out = log.open("ab")
    return subprocess.Popen([sys.executable, "-m", "nika_tui", "serve"], stdout=out, stderr=out,
                            env=env)  # fmt: skip


def _remember(client: MemoryClient, tenant_id: str, text: str) -> str:
    return client.remember(RememberRequest(
        tenant_id=tenant_id, text=text,
        meta=NikaMeta(timestamp=datetime.now(UTC), project_id=tenant_id),
    ))  # fmt: skip


def _found(client: MemoryClient, tenant_id: str, text: str) -> int:
    hits = client.recall(RecallQuery(tenant_id=tenant_id, query=text, limit=10)).hits
    return sum(h.record.text == text for h in hits)


def test_kill_9_of_the_service_mid_reset_keeps_the_old_store_and_the_held_write(
    make_tenant,
    redis_url: str,
    embedder,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    make_tenant(TENANT)
    make_tenant(OTHER)
    bare, release = held_remote(tmp_path)
    work = tmp_path / "knowledge"
    subprocess.run(["git", "clone", "-q", str(bare), str(work)], check=True, capture_output=True)
    save_tenant(load_tenant(TENANT).model_copy(update={"knowledge_repo": str(work)}))
    # Where `nika serve` opens them; closed before it starts (a shard's WAL is locked).
    store = EdgeVectorStore(data_dir() / "qdrant", 384, flush_writes=False)
    seed_history(EngineContext(settings=Settings.from_env(),
                               redis=redis.Redis.from_url(redis_url, decode_responses=True),
                               vectors=store, embedder=embedder), TENANT)  # fmt: skip
    store.close()
    client = MemoryClient(redis.Redis.from_url(redis_url, decode_responses=True), timeout=60)
    log = tmp_path / "serve.log"
    first = _serve(log)
    second: subprocess.Popen[bytes] | None = None
    outcome: list[object] = []

    def send_reset() -> None:
        try:
            outcome.append(client.send(CompressResetRequest(TENANT, None), timeout=600))
        except NikaError as exc:  # the service dies under it
            outcome.append(exc)

    try:
        retry_until(client.service_alive, timeout=180, what="the first service")
        threading.Thread(target=send_reset, daemon=True).start()
        retry_until(lambda: (tmp_path / "holding").exists() or outcome, timeout=300,
                    what="the push held by the hook")  # fmt: skip
        assert not outcome, outcome  # the reset is running, not answered
        held_key = _remember(client, TENANT, HELD_FACT)
        other_key = _remember(client, OTHER, OTHER_FACT)
        assert client.wait_ingested(OTHER, other_key, timeout=120)["id"]  # stored mid-reset
        assert client.redis.llen(redis_keys.ingest_done(TENANT, held_key)) == 0  # held
        at_kill = kill_inside(first, TENANT, "compress", (tmp_path / "holding").exists)
        assert at_kill["stage"] == "compress"
        # The pointer is written last: killed before it, the old store is the live one.
        assert not (data_dir() / "qdrant" / TENANT / "GENERATION").exists()
        release.touch()  # the orphaned push ends; a reset run again at the restart completes
        second = _serve(log)
        retry_until(client.service_alive, timeout=180, what="the restarted service")
        # The held write was pending: stored now, once; the other tenant's is still there.
        assert client.wait_ingested(TENANT, held_key, timeout=600)["id"]
        assert _found(client, TENANT, HELD_FACT) == 1
        assert _found(client, OTHER, OTHER_FACT) == 1
    finally:
        release.touch()
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=120)
    # The killed reset's RPC may be served again by the restarted service (its deadline not
    # passed): then it completed; else the journal still names the stage it was killed in.
    assert journal(TENANT)["stage"] in {"compress", "done"}
