"""Two real `nika serve` workers (separate data dirs, one embedded Redis); kill -9 of one
mid-ingest: the survivor takes its tenants over (shards adopted, pending entries replayed),
every memory is stored exactly once and recall of those tenants works through the survivor."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.memory import Layer, memory_id
from nika_tui.domain.requests import RecallQuery, RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.engine.worker_keys import PRIMARY_ID, alive_key, preferred
from nika_tui.services import redis_keys
from nika_tui.services.memory_client import MemoryClient
from tests.helpers import retry_until

pytestmark = [pytest.mark.slow, pytest.mark.embedder]

PER_TENANT = 120
JOINED = "wb"


def _tenants() -> dict[str, list[str]]:
    """Two tenants per worker, as the workers' rendezvous hash assigns them."""
    by: dict[str, list[str]] = {PRIMARY_ID: [], JOINED: []}
    i = 0
    while min(len(v) for v in by.values()) < 2:
        t = f"tenant{i}"
        owner = preferred(t, [PRIMARY_ID, JOINED])
        if len(by[owner]) < 2:
            by[owner].append(t)
        i += 1
    return by


def _serve(data: Path, log: Path, redis_url: str, *join: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, NIKA_OS_DATA_DIR=str(data), NIKA_LEASE_TTL_S="5",
               NIKA_KERNEL_WATCH_S="0")  # fmt: skip
    out = log.open("ab")
    argv = [sys.executable, "-m", "nika_tui", "serve", *join]
    return subprocess.Popen(argv, stdout=out, stderr=out, env=env)


def _sees_both(r: redis.Redis, worker_id: str) -> bool:
    raw = r.get(alive_key(worker_id))
    return bool(raw) and set(json.loads(str(raw))["sees"]) == {PRIMARY_ID, JOINED}


def _ingested(r: redis.Redis, tenants: list[str]) -> int:
    return sum(int(r.hget(redis_keys.metrics(t), "ingested") or 0) for t in tenants)


def _drained(r: redis.Redis) -> bool:
    pending = r.xpending(redis_keys.INGEST_STREAM, redis_keys.INGEST_GROUP)
    return r.xlen(redis_keys.INGEST_STREAM) == 0 and int(pending["pending"]) == 0


def test_kill_9_of_a_worker_mid_ingest_its_tenants_move_to_the_survivor(
    redis_client: redis.Redis,
    redis_url: str,
    make_tenant: Callable[..., TenantConfig],
    tmp_path: Path,
) -> None:
    by = _tenants()
    tenants = by[PRIMARY_ID] + by[JOINED]
    for t in tenants:
        make_tenant(t)
    log = tmp_path / "workers.log"
    primary = _serve(tmp_path / "a", log, redis_url)
    joined = _serve(tmp_path / "b", log, redis_url, "--join", redis_url, "--worker-id", JOINED)
    try:
        for w in (PRIMARY_ID, JOINED):
            retry_until(lambda w=w: _sees_both(redis_client, w), timeout=120, interval=0.1,
                        what=f"{w} sees both workers")  # fmt: skip
        client = MemoryClient(redis_client, timeout=30)
        t0 = datetime(2026, 3, 1, tzinfo=UTC)
        expected: dict[str, set[str]] = {t: set() for t in tenants}
        for i in range(PER_TENANT):
            for t in tenants:
                req = RememberRequest(
                    tenant_id=t,
                    text=f"Fact {i} of {t}: service-{i} listens on port {10000 + i}",
                    meta=NikaMeta(timestamp=t0, project_id=f"p{i}"),
                )
                expected[t].add(memory_id(t, client.remember(req)))
        retry_until(lambda: _ingested(redis_client, by[JOINED]) >= 20, timeout=120,
                    interval=0.01, what="the joined worker ingests")  # fmt: skip
        joined.send_signal(signal.SIGKILL)
        joined.wait(timeout=30)
        assert joined.returncode == -signal.SIGKILL
        assert _ingested(redis_client, by[JOINED]) < 2 * PER_TENANT, "killed too late"

        retry_until(lambda: _drained(redis_client), timeout=240, interval=0.1,
                    what="the survivor drains every tenant")  # fmt: skip
        holders = {t: str(redis_client.get(f"nika:lease:{t}")).split("|")[0] for t in tenants}
        assert set(holders.values()) == {PRIMARY_ID}, holders
        for t in by[JOINED]:
            stats = client.call("stats", {"tenant_id": t})
            assert stats["tenants"][t]["semantic"] == {"current": PER_TENANT, "retired": 0}
            hits = client.recall(RecallQuery(tenant_id=t, query="which port does service-7 use"))
            assert any("service-7 " in h.record.text for h in hits.hits), hits
    finally:
        primary.send_signal(signal.SIGTERM)
        primary.wait(timeout=60)
        if joined.poll() is None:
            joined.kill()
    assert primary.returncode == 0, log.read_text()[-3000:]
    assert redis_client.xlen(redis_keys.INGEST_DEAD) == 0

    from nika_tui.services.vectors.edge import EdgeVectorStore

    store = EdgeVectorStore(tmp_path / "a" / "qdrant", 384)
    try:
        for t in tenants:
            ids = [p.id for p in store.scroll(t, Layer.SEMANTIC)]
            assert len(ids) == PER_TENANT and set(ids) == expected[t], t
    finally:
        store.close()
