"""The index maintainer: optimises an idle tenant's Edge shard in a child, never a busy one's,
without holding the loop thread; brings the shard online after success, failure or stop."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from nika_tui.domain.kernel_state import KernelState, StateSource
from nika_tui.domain.memory import Layer
from nika_tui.engine.context import EngineContext
from nika_tui.engine.debt.schedule import DebtScheduler
from nika_tui.engine.index_maintenance import IndexMaintainer, default_min_pending
from nika_tui.errors import StoreUnavailable
from nika_tui.services.kernel_store import set_state
from nika_tui.services.vectors.edge import EdgeVectorStore
from nika_tui.settings import Settings
from tests.helpers import retry_until
from tests.support.vector_fill import INDEXED_N, fill, fill_points

if TYPE_CHECKING:
    # Only an annotation here: importing it at module load pulls qdrant_client into collection.
    from nika_tui.services.vectors.client import ClientVectorStore

SEM = Layer.SEMANTIC


def _ctx(debt_ctx: EngineContext, **env: str) -> EngineContext:
    merged = {**debt_ctx.child_env, **env}
    return dataclasses.replace(
        debt_ctx, child_env=merged, secrets_env=merged, settings=Settings.from_env(merged)
    )


def _store(ctx: EngineContext) -> EdgeVectorStore:
    assert isinstance(ctx.vectors, EdgeVectorStore)
    return ctx.vectors


def _bus(ctx: EngineContext, tenant_id: str, kind: str) -> list[dict[str, Any]]:
    return [
        line.data
        for line in ctx.bus(tenant_id).read()
        if line.data is not None and line.data.get("kind") == kind
    ]


def test_default_threshold_is_qdrants_indexing_threshold() -> None:
    # 10,000 KB of 384-d float32 vectors: a smaller appendable segment is left unindexed.
    assert default_min_pending(384) == 6667


@pytest.mark.slow
def test_idle_tenant_is_optimised_in_the_background_busy_one_is_not(
    debt_ctx: EngineContext,
) -> None:
    ctx = _ctx(debt_ctx, NIKA_OPTIMIZE_MIN_PENDING="1000", NIKA_OPTIMIZE_IDLE_S="300")
    store = _store(ctx)
    acme = fill(store, "acme", INDEXED_N)
    beta = fill(store, "beta", 1500, seed=1)
    now = ctx.clock()
    set_state(ctx.redis, "acme", KernelState.IDLE, StateSource.HOOK, now - timedelta(minutes=10))
    set_state(ctx.redis, "beta", KernelState.WORKING, StateSource.HOOK, now)
    maintainer = IndexMaintainer(ctx, check_every_s=0)

    assert maintainer.tick() == ["index-started:acme/semantic"]

    # The tick returned while the child works: the shard is offline, the loop thread is free
    # to serve another tenant, and the next tick does not wait either.
    assert maintainer.running == ("acme", SEM)
    with pytest.raises(StoreUnavailable, match="semantic memory of tenant acme is being optimised"):
        store.search_dense("acme", SEM, acme[0].vector)
    assert store.search_dense("beta", SEM, beta[3].vector, limit=1)[0].id == beta[3].id
    assert maintainer.tick() == []
    assert maintainer.running == ("acme", SEM)

    assert retry_until(maintainer.tick, 120, 0.05, "the child to finish") == [
        "index-optimized:acme/semantic"
    ]
    assert maintainer.running is None
    assert not store.is_offline("acme", SEM)
    assert store.pending_index("acme", SEM) == 0
    assert store.count("acme", SEM) == INDEXED_N
    assert store.search_dense("acme", SEM, acme[5].vector, limit=1)[0].id == acme[5].id
    (message,) = _bus(ctx, "acme", "index.optimized")
    assert message["body"]["optimized"] is True
    assert message["body"]["points"] == INDEXED_N
    assert message["body"]["pending_before"] == INDEXED_N

    # Beta is busy: never picked, although it has enough pending points.
    assert maintainer.tick() == []
    assert store.pending_index("beta", SEM) == 1500
    assert _bus(ctx, "beta", "index.optimized") == []

    # Asleep long enough, it is picked; 1,500 points are under Qdrant's indexing threshold, so
    # the run optimises nothing and the shard is not retried until it has grown.
    set_state(ctx.redis, "beta", KernelState.IDLE, StateSource.HOOK, now - timedelta(minutes=6))
    assert maintainer.tick() == ["index-started:beta/semantic"]
    assert retry_until(maintainer.tick, 120, 0.05, "the child to finish") == [
        "index-optimized:beta/semantic"
    ]
    assert _bus(ctx, "beta", "index.optimized")[0]["body"]["optimized"] is False
    assert maintainer.tick() == []
    assert store.count("beta", SEM) == 1500


def test_a_recently_idle_tenant_waits_for_the_idle_threshold(debt_ctx: EngineContext) -> None:
    ctx = _ctx(debt_ctx, NIKA_OPTIMIZE_MIN_PENDING="100", NIKA_OPTIMIZE_IDLE_S="300")
    fill(_store(ctx), "acme", 200)
    now = ctx.clock()
    set_state(ctx.redis, "acme", KernelState.IDLE, StateSource.HOOK, now - timedelta(minutes=2))
    maintainer = IndexMaintainer(ctx, check_every_s=0)
    assert maintainer.tick() == []
    assert maintainer.running is None
    ctx.clock.now += timedelta(minutes=4)  # type: ignore[attr-defined]
    assert maintainer.tick() == ["index-started:acme/semantic"]
    maintainer.close()


def test_stop_kills_the_child_brings_the_shard_online_and_backs_off(
    debt_ctx: EngineContext,
) -> None:
    ctx = _ctx(debt_ctx, NIKA_OPTIMIZE_MIN_PENDING="100")
    store = _store(ctx)
    fill(store, "acme", 300)
    ticks = [1000.0]
    maintainer = IndexMaintainer(ctx, check_every_s=0, monotonic=lambda: ticks[0])
    assert maintainer.tick() == ["index-started:acme/semantic"]
    assert store.is_offline("acme", SEM)

    maintainer.close()  # what the service does on stop (DebtScheduler.close)

    assert maintainer.running is None
    assert not store.is_offline("acme", SEM)
    assert store.count("acme", SEM) == 300
    (failed,) = _bus(ctx, "acme", "index.optimize_failed")
    assert failed["body"]["retry_in_s"] == maintainer.backoff_s
    # Backed off: not retried at once, retried once the back-off is over.
    assert maintainer.tick() == []
    ticks[0] += maintainer.backoff_s + 1
    assert maintainer.tick() == ["index-started:acme/semantic"]
    maintainer.close()


def test_only_edge_stores_are_maintained(
    debt_ctx: EngineContext, client_store: ClientVectorStore
) -> None:
    maintainer = IndexMaintainer(dataclasses.replace(debt_ctx, vectors=client_store), 0)
    assert not maintainer.enabled
    assert maintainer.tick() == []
    assert IndexMaintainer(debt_ctx).enabled


def test_the_debt_scheduler_drives_the_maintainer_every_tick(debt_ctx: EngineContext) -> None:
    ctx = _ctx(debt_ctx, NIKA_OPTIMIZE_MIN_PENDING="100")
    fill(_store(ctx), "acme", 300)
    scheduler = DebtScheduler(ctx, check_every_s=3600)  # no audit or REM during the test
    assert isinstance(scheduler.index, IndexMaintainer)
    scheduler.index = IndexMaintainer(ctx, check_every_s=0)
    assert scheduler.tick() == ["index-started:acme/semantic"]
    assert _store(ctx).is_offline("acme", SEM)
    scheduler.close()
    assert not _store(ctx).is_offline("acme", SEM)


def test_the_shard_comes_back_online_without_a_tick(debt_ctx: EngineContext) -> None:
    """The service loop skips maintenance ticks while an ingest batch keeps failing (e.g. one
    writing to the offline shard): the shard must not wait for a tick to come back."""
    ctx = _ctx(debt_ctx, NIKA_OPTIMIZE_MIN_PENDING="100")
    store = _store(ctx)
    points = fill(store, "acme", 300)
    maintainer = IndexMaintainer(ctx, check_every_s=0)
    assert maintainer.tick() == ["index-started:acme/semantic"]

    retry_until(lambda: not store.is_offline("acme", SEM), 60, what="the shard back online")
    store.upsert("acme", SEM, fill_points(1))  # what the retried ingest batch does
    assert store.count("acme", SEM) == 301
    assert store.retrieve("acme", SEM, [points[0].id])[0].payload == points[0].payload | {
        "tenant_id": "acme",
        "layer": "semantic",
        "text": points[0].text,
    }

    assert maintainer.tick() == ["index-optimized:acme/semantic"]  # the report comes later
    assert maintainer.running is None
