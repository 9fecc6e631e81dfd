"""`nika scale move`: the holder releases the tenant (flush, close), the target acquires it and
adopts its real Qdrant Edge shards (copied between the two workers' data dirs); nothing lost,
nothing duplicated."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import uuid
from pathlib import Path

import redis

from nika_tui.domain.memory import Layer
from nika_tui.domain.ports import VectorPoint
from nika_tui.engine.leases import lease_key
from nika_tui.engine.worker import Worker
from nika_tui.engine.worker_keys import pin_key, preferred
from nika_tui.services import redis_keys
from nika_tui.services.vectors.edge import EdgeVectorStore

GROUP = redis_keys.INGEST_GROUP


def _nika(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nika_tui", "scale", *argv],
        capture_output=True, text=True, env=dict(os.environ), check=False,
    )  # fmt: skip


def _points(n: int) -> list[VectorPoint]:
    rng = random.Random(7)
    out = []
    for i in range(n):
        v = [rng.uniform(-1, 1) for _ in range(384)]
        out.append(VectorPoint(str(uuid.uuid4()), v, f"fact {i}", {"status": "current"}))
    return out


def test_move_releases_copies_and_reopens_the_shards(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    tenant = next(t for t in (f"t{i}" for i in range(99)) if preferred(t, ["wa", "wb"]) == "wa")
    store_a = EdgeVectorStore(tmp_path / "a" / "qdrant", 384, flush_writes=False)
    store_b = EdgeVectorStore(tmp_path / "b" / "qdrant", 384, flush_writes=False)
    wa = Worker(redis_client, "wa", tmp_path / "a", store_a, ttl_s=60)
    wb = Worker(redis_client, "wb", tmp_path / "b", store_b, ttl_s=60)
    try:
        for w in (wa, wb, wa):
            w.tick(GROUP, force=True)
        assert wa.route(tenant) == "wa" and wb.route(tenant) == "wa"
        points = _points(40)
        store_a.upsert(tenant, Layer.SEMANTIC, points)  # not flushed: the release flushes

        refused = _nika("move", "--tenant", tenant, "--to", "nobody", "--json")
        assert refused.returncode == 1 and "not live" in refused.stderr
        out = _nika("move", "--tenant", tenant, "--to", "wb", "--json")
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == {
            "tenant": tenant,
            "from": "wa",
            "to": "wb",
            "moving": True,
        }

        assert wa.tick(GROUP, force=True), "the holder releases and drains what it had read"
        assert tenant not in wa.held and not store_a.is_open(tenant, Layer.SEMANTIC)
        assert not redis_client.exists(lease_key(tenant))
        wb.tick(GROUP, force=True)
        assert tenant in wb.held and redis_client.get(lease_key(tenant)) == "wb|2"
        assert not redis_client.exists(pin_key(tenant)), "the move is done"
        ids = sorted(p.id for p in store_b.scroll(tenant, Layer.SEMANTIC))
        assert ids == sorted(p.id for p in points)
        wa.tick(GROUP, force=True)
        assert wa.route(tenant) == "wb", "the old holder now hands the tenant's entries over"
    finally:
        store_a.close()
        store_b.close()


def test_a_tenant_being_reset_moves_only_after_its_reset(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    """The loop runs on during a reset (decision 505): a move must not release its shards."""
    tenant = next(t for t in (f"t{i}" for i in range(99)) if preferred(t, ["wa", "wb"]) == "wa")
    store_a = EdgeVectorStore(tmp_path / "a" / "qdrant", 384, flush_writes=False)
    store_b = EdgeVectorStore(tmp_path / "b" / "qdrant", 384, flush_writes=False)
    wa = Worker(redis_client, "wa", tmp_path / "a", store_a, ttl_s=60)
    wb = Worker(redis_client, "wb", tmp_path / "b", store_b, ttl_s=60)
    resetting = {tenant}
    wa.keep_now = resetting.__contains__
    try:
        for w in (wa, wb, wa):
            w.tick(GROUP, force=True)
        assert wa.route(tenant) == "wa"
        store_a.upsert(tenant, Layer.SEMANTIC, _points(5))
        assert _nika("move", "--tenant", tenant, "--to", "wb", "--json").returncode == 0
        wa.tick(GROUP, force=True)
        assert tenant in wa.held and store_a.is_open(tenant, Layer.SEMANTIC)
        assert redis_client.get(pin_key(tenant)) == "wb", "the move is still asked for"
        resetting.clear()  # the reset ended
        assert wa.tick(GROUP, force=True)
        assert tenant not in wa.held and not store_a.is_open(tenant, Layer.SEMANTIC)
    finally:
        store_a.close()
        store_b.close()
