"""kill -9 of the real `nika serve` process in the middle of 1,000 ingests loses nothing and
duplicates nothing: after a restart, exactly the 1,000 expected points are stored."""

from __future__ import annotations

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
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.paths import data_dir
from nika_tui.services import redis_keys
from nika_tui.services.memory_client import MemoryClient
from tests.helpers import retry_until

pytestmark = [pytest.mark.slow, pytest.mark.embedder]

N = 1000
TENANT = "crash"


def _serve(log: Path) -> subprocess.Popen[bytes]:
    out = log.open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "nika_tui", "serve"], stdout=out, stderr=out, env=dict(os.environ)
    )


def _embed_children(pid: int) -> list[int]:
    """The service's ingest-embedder children (decision 583)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"nika_tui.services.embed_worker" in cmdline:
                found.append(int(child))
    return found


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"


def _ingested(r: redis.Redis) -> int:
    return int(r.hget(redis_keys.metrics(TENANT), "ingested") or 0)


def _drained(r: redis.Redis) -> bool:
    pending = r.xpending(redis_keys.INGEST_STREAM, redis_keys.INGEST_GROUP)
    return r.xlen(redis_keys.INGEST_STREAM) == 0 and int(pending["pending"]) == 0


def test_kill_9_mid_ingest_then_restart_stores_each_memory_exactly_once(
    redis_client: redis.Redis, make_tenant: Callable[..., TenantConfig], tmp_path: Path
) -> None:
    make_tenant(TENANT)
    client = MemoryClient(redis_client, timeout=30)
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    keys = []
    for i in range(N):
        # One project per fact: nothing supersedes anything, every memory must survive.
        req = RememberRequest(
            tenant_id=TENANT,
            text=f"Fact {i}: service-{i} listens on port {10000 + i}",
            meta=NikaMeta(timestamp=t0, project_id=f"p{i}"),
        )
        keys.append(client.remember(req))
    expected = {memory_id(TENANT, k) for k in keys}
    assert len(expected) == N

    log = tmp_path / "serve.log"
    first = _serve(log)
    try:
        retry_until(lambda: _ingested(redis_client) >= 100, timeout=300, interval=0.01,
                    what="100 memories ingested")  # fmt: skip
        # The ingest's embedder process starts with the first batch 5 s after the start.
        retry_until(lambda: _embed_children(first.pid), timeout=120, interval=0.01,
                    what="the embedder child started")  # fmt: skip
        children = _embed_children(first.pid)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    assert first.returncode == -signal.SIGKILL
    assert redis_client.xlen(redis_keys.INGEST_STREAM) > 0, "killed too late: nothing left"
    # The ingest's embedder process reads the end of its input and leaves with the service.
    assert len(children) == 1
    retry_until(lambda: _gone(children[0]), timeout=120, what="the embedder child gone")

    second = _serve(log)
    try:
        retry_until(lambda: _drained(redis_client), timeout=600, interval=0.1,
                    what="ingest stream drained")  # fmt: skip
        stats = client.call("stats", {"tenant_id": TENANT})
        assert stats["tenants"][TENANT]["semantic"] == {"current": N, "retired": 0}
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=60)
    assert second.returncode == 0, log.read_text()
    assert redis_client.xlen(redis_keys.INGEST_DEAD) == 0

    from nika_tui.services.vectors.edge import EdgeVectorStore

    store = EdgeVectorStore(data_dir() / "qdrant", 384)
    try:
        points = list(store.scroll(TENANT, Layer.SEMANTIC))
    finally:
        store.close()
    ids = [p.id for p in points]
    assert len(ids) == N and set(ids) == expected
    assert len({p.payload["text"] for p in points}) == N
