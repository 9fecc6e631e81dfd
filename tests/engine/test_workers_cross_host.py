"""Two real `nika serve` workers announcing different hosts (separate data dirs, no path of one
known to the other, one embedded Redis): `nika scale move` carries a tenant's Edge shards
through Redis; every memory is served once by the new holder and later writes land there."""

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
from nika_tui.engine import shard_transfer
from nika_tui.engine.leases import lease_key
from nika_tui.engine.worker_keys import PRIMARY_ID, alive_key, home_key, preferred
from nika_tui.services import redis_keys
from nika_tui.services.memory_client import MemoryClient
from tests.helpers import retry_until

pytestmark = [pytest.mark.slow, pytest.mark.embedder]

JOINED = "wb"
FIRST, LATER = 40, 10


def _serve(data: Path, log: Path, host: str, *join: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, NIKA_OS_DATA_DIR=str(data), NIKA_LEASE_TTL_S="5",
               NIKA_KERNEL_WATCH_S="0", NIKA_WORKER_HOST=host)  # fmt: skip
    out = log.open("ab")
    return subprocess.Popen([sys.executable, "-m", "nika_tui", "serve", *join], stdout=out,
                            stderr=out, env=env)  # fmt: skip


def _sees_both(r: redis.Redis, worker_id: str) -> bool:
    raw = r.get(alive_key(worker_id))
    return bool(raw) and set(json.loads(str(raw))["sees"]) == {PRIMARY_ID, JOINED}


def _holder(r: redis.Redis, tenant: str) -> str:
    return str(r.get(lease_key(tenant)) or "").split("|")[0]


def _remember(client: MemoryClient, tenant: str, start: int, n: int) -> set[str]:
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    ids = set()
    for i in range(start, start + n):
        req = RememberRequest(
            tenant_id=tenant,
            text=f"Fact {i} of {tenant}: service-{i} listens on port {10000 + i}",
            meta=NikaMeta(timestamp=t0, project_id=f"p{i}"),
        )
        ids.add(memory_id(tenant, client.remember(req)))
    return ids


def _drained(r: redis.Redis) -> bool:
    pending = r.xpending(redis_keys.INGEST_STREAM, redis_keys.INGEST_GROUP)
    return r.xlen(redis_keys.INGEST_STREAM) == 0 and int(pending["pending"]) == 0


def test_a_move_across_hosts_carries_the_shards_through_redis(
    redis_client: redis.Redis,
    redis_url: str,
    make_tenant: Callable[..., TenantConfig],
    tmp_path: Path,
) -> None:
    tenant = next(t for t in (f"t{i}" for i in range(99)) if preferred(t, [PRIMARY_ID, JOINED])
                  == PRIMARY_ID)  # fmt: skip
    make_tenant(tenant)
    log = tmp_path / "workers.log"
    primary = _serve(tmp_path / "a", log, "host-a")
    joined = _serve(tmp_path / "b", log, "host-b", "--join", redis_url, "--worker-id", JOINED)
    try:
        for w in (PRIMARY_ID, JOINED):
            retry_until(lambda w=w: _sees_both(redis_client, w), timeout=180, interval=0.1,
                        what=f"{w} sees both workers")  # fmt: skip
        client = MemoryClient(redis_client, timeout=60)
        expected = _remember(client, tenant, 0, FIRST)
        retry_until(lambda: _drained(redis_client), timeout=120, interval=0.1, what="ingested")
        assert _holder(redis_client, tenant) == PRIMARY_ID

        moved = subprocess.run(
            [sys.executable, "-m", "nika_tui", "scale", "move", "--tenant", tenant, "--to",
             JOINED, "--json"], capture_output=True, text=True, env=dict(os.environ), check=False,
        )  # fmt: skip
        assert moved.returncode == 0, moved.stderr
        # The home is set once the shards are adopted (the lease itself comes just before).
        retry_until(lambda: redis_client.get(home_key(tenant)) == JOINED, timeout=60,
                    interval=0.1, what="the joined worker holds the tenant")  # fmt: skip
        assert _holder(redis_client, tenant) == JOINED
        assert not redis_client.exists(shard_transfer.pack_key(tenant)), "adopted and dropped"

        stats = client.call("stats", {"tenant_id": tenant}, timeout=60)
        assert stats["tenants"][tenant]["semantic"] == {"current": FIRST, "retired": 0}
        hits = client.recall(RecallQuery(tenant_id=tenant, query="which port does service-7 use"))
        assert any("service-7 " in h.record.text for h in hits.hits), hits
        expected |= _remember(client, tenant, FIRST, LATER)
        retry_until(lambda: _drained(redis_client), timeout=120, interval=0.1, what="later")
        stats = client.call("stats", {"tenant_id": tenant}, timeout=60)
        assert stats["tenants"][tenant]["semantic"] == {"current": FIRST + LATER, "retired": 0}
    finally:
        primary.send_signal(signal.SIGTERM)
        primary.wait(timeout=60)
        joined.send_signal(signal.SIGTERM)
        joined.wait(timeout=60)
    assert (primary.returncode, joined.returncode) == (0, 0), log.read_text()[-3000:]
    assert "adopted the shards of" in log.read_text() and "through Redis" in log.read_text()

    from nika_tui.services.vectors.edge import EdgeVectorStore

    store = EdgeVectorStore(tmp_path / "b" / "qdrant", 384)
    try:
        ids = [p.id for p in store.scroll(tenant, Layer.SEMANTIC)]
        assert len(ids) == FIRST + LATER and set(ids) == expected, "none lost, none twice"
    finally:
        store.close()
