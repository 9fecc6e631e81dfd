"""A tenant moves between two workers on different hosts (separate data dirs, no shared
filesystem path between them, one Redis): its real Qdrant Edge shards travel through Redis
and are reopened by the new holder; nothing lost, nothing duplicated, no stale pack adopted."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest
import redis

from nika_tui.domain.memory import Layer
from nika_tui.domain.ports import VectorPoint
from nika_tui.engine import shard_transfer
from nika_tui.engine.leases import lease_key
from nika_tui.engine.worker import Worker
from nika_tui.engine.worker_keys import home_key, pin_key, preferred
from nika_tui.services import redis_keys
from nika_tui.services.vectors.edge import EdgeVectorStore

GROUP = redis_keys.INGEST_GROUP


def _points(n: int, seed: int) -> list[VectorPoint]:
    rng = random.Random(seed)
    return [
        VectorPoint(
            str(uuid.uuid4()), [rng.uniform(-1, 1) for _ in range(384)], f"fact {i}", {"s": "c"}
        )
        for i in range(n)
    ]


class Pair:
    """Two workers, each with its own data dir and host name."""

    def __init__(self, r: redis.Redis, tmp: Path) -> None:
        self.tenant = next(
            t for t in (f"t{i}" for i in range(99)) if preferred(t, ["wa", "wb"]) == "wa"
        )
        self.store_a = EdgeVectorStore(tmp / "a" / "qdrant", 384, flush_writes=False)
        self.store_b = EdgeVectorStore(tmp / "b" / "qdrant", 384, flush_writes=False)
        self.wa = Worker(r, "wa", tmp / "a", self.store_a, ttl_s=60, host="host-a")
        self.wb = Worker(r, "wb", tmp / "b", self.store_b, ttl_s=60, host="host-b")
        for w in (self.wa, self.wb, self.wa):
            w.tick(GROUP, force=True)
        assert self.wa.route(self.tenant) == "wa"

    def move(self, r: redis.Redis, src: Worker, dst: Worker) -> None:
        r.set(pin_key(self.tenant), dst.id)
        src.tick(GROUP, force=True)
        dst.tick(GROUP, force=True)

    def ids(self, store: EdgeVectorStore) -> list[str]:
        return sorted(p.id for p in store.scroll(self.tenant, Layer.SEMANTIC))

    def close(self) -> None:
        self.store_a.close()
        self.store_b.close()


@pytest.fixture
def pair(redis_client: redis.Redis, tmp_path: Path) -> Pair:
    p = Pair(redis_client, tmp_path)
    yield p  # type: ignore[misc]
    p.close()


def test_shards_travel_through_redis_to_another_host(
    pair: Pair, redis_client: redis.Redis, tmp_path: Path
) -> None:
    points = _points(60, 7)
    pair.store_a.upsert(pair.tenant, Layer.SEMANTIC, points)  # not flushed: the release does
    pair.store_a.upsert(pair.tenant, Layer.EPISODIC, _points(5, 8))

    pair.move(redis_client, pair.wa, pair.wb)

    assert pair.tenant in pair.wb.held and str(redis_client.get(lease_key(pair.tenant))) == "wb|2"
    assert pair.ids(pair.store_b) == sorted(p.id for p in points), "every point, once"
    assert pair.store_b.count(pair.tenant, Layer.EPISODIC) == 5
    assert not redis_client.exists(shard_transfer.pack_key(pair.tenant)), "adopted, then dropped"
    assert not redis_client.exists(shard_transfer.data_key(pair.tenant))
    # The new holder writes to the reopened shard, and the search finds the moved points.
    more = _points(3, 9)
    pair.store_b.upsert(pair.tenant, Layer.SEMANTIC, more)
    hits = pair.store_b.search_dense(pair.tenant, Layer.SEMANTIC, points[0].vector, limit=1)
    assert hits[0].id == points[0].id
    assert pair.store_b.count(pair.tenant, Layer.SEMANTIC) == 63


def test_a_move_back_carries_the_newer_writes(pair: Pair, redis_client: redis.Redis) -> None:
    first = _points(10, 1)
    pair.store_a.upsert(pair.tenant, Layer.SEMANTIC, first)
    pair.move(redis_client, pair.wa, pair.wb)
    later = _points(4, 2)
    pair.store_b.upsert(pair.tenant, Layer.SEMANTIC, later)
    pair.store_b.delete(pair.tenant, Layer.SEMANTIC, [first[0].id])

    pair.move(redis_client, pair.wb, pair.wa)

    assert pair.tenant in pair.wa.held
    expected = sorted(p.id for p in [*first[1:], *later])
    assert pair.ids(pair.store_a) == expected, "host a's old copy was replaced, not merged"


def test_a_stale_pack_is_never_adopted(pair: Pair, redis_client: redis.Redis) -> None:
    """A pack left by an earlier holder is not the home's: a takeover does not adopt it."""
    pair.store_a.upsert(pair.tenant, Layer.SEMANTIC, _points(5, 3))
    pair.move(redis_client, pair.wa, pair.wb)
    pair.store_b.upsert(pair.tenant, Layer.SEMANTIC, _points(2, 4))
    # wa published an old pack again (say, a replayed release) after wb became the home.
    shard_transfer.publish(redis_client, pair.tenant, pair.store_a.root, "wa", "host-a")
    assert str(redis_client.get(home_key(pair.tenant))) == "wb"
    pair.wb.release(pair.tenant)  # wb stops: it publishes its own, newer pack
    assert shard_transfer.pack_from(redis_client, pair.tenant) == "wb"
    pair.wa.tick(GROUP, force=True)
    assert pair.store_a.count(pair.tenant, Layer.SEMANTIC) == 7


def test_a_corrupt_pack_is_refused_and_the_lease_given_back(
    pair: Pair, redis_client: redis.Redis
) -> None:
    pair.store_a.upsert(pair.tenant, Layer.SEMANTIC, _points(5, 5))
    redis_client.set(pin_key(pair.tenant), "wb")
    pair.wa.tick(GROUP, force=True)
    redis_client.lset(shard_transfer.data_key(pair.tenant), 0, "garbage")
    pair.wb.tick(GROUP, force=True)
    assert pair.tenant not in pair.wb.held, "no lease kept over shards it could not adopt"
    assert not redis_client.exists(lease_key(pair.tenant))
    assert pair.store_b.count(pair.tenant, Layer.SEMANTIC) == 0
    assert shard_transfer.pack_from(redis_client, pair.tenant) == "wa", "kept for a retry"


def test_alone_on_a_host_nothing_is_published(redis_client: redis.Redis, tmp_path: Path) -> None:
    """Same-host peers copy the directory; a pack would only fill Redis and its AOF."""
    store = EdgeVectorStore(tmp_path / "a" / "qdrant", 384, flush_writes=False)
    try:
        wa = Worker(redis_client, "wa", tmp_path / "a", store, ttl_s=60, host="h")
        wb = Worker(redis_client, "wb", tmp_path / "b", None, ttl_s=60, host="h")
        for w in (wa, wb, wa):
            w.tick(GROUP, force=True)
        tenant = next(t for t in (f"t{i}" for i in range(99)) if preferred(t, ["wa", "wb"]) == "wa")
        assert wa.route(tenant) == "wa"
        store.upsert(tenant, Layer.SEMANTIC, _points(3, 6))
        wa.release(tenant)
        assert not redis_client.exists(shard_transfer.pack_key(tenant))
    finally:
        store.close()


def test_a_pack_cannot_write_outside_the_tenant_directory(tmp_path: Path) -> None:
    import io
    import zlib

    evil = shard_transfer._frame({"path": "../outside", "size": 1, "extents": [[0, 1]]}) + b"x"
    with pytest.raises(ValueError, match="leaves"):
        shard_transfer.unpack_dir(zlib.compress(evil), tmp_path / "in")
    assert not (tmp_path / "outside").exists()
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    with open(src / "d" / "sparse", "wb") as fh:
        fh.truncate(32 << 20)
        fh.seek(5 << 20)
        fh.write(b"data")
    buf = io.BytesIO()
    shard_transfer.pack_dir(src, buf)
    assert len(buf.getvalue()) < 64 << 10, "holes are not packed"
    (tmp_path / "dst").mkdir()
    shard_transfer.unpack_dir(buf.getvalue(), tmp_path / "dst")
    out = tmp_path / "dst" / "d" / "sparse"
    assert out.read_bytes() == (src / "d" / "sparse").read_bytes()
    assert out.stat().st_blocks * 512 < 1 << 20, "and they stay holes on the receiver"
