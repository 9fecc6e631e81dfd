"""`compress --reset` when the vectors live on a Qdrant server (the qdrant-client adapter).

No Qdrant server binary can be installed on this machine (none is packaged in the registries it
reaches, and the Docker client has no daemon nor an image to pull), so the adapter runs on
qdrant-client's own local engine (``QdrantClient(path=...)``): the same client calls, collections,
aliases and metadata, persisted on disk. What a server alone adds — the alias swap being one
atomic request across processes — is Qdrant's documented guarantee, not re-tested here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import redis

from nika_tui.domain.memory import Layer, Status
from nika_tui.domain.ports import PointFilter
from nika_tui.engine.context import EngineContext
from nika_tui.engine.reset import reset
from nika_tui.services.config_store import load_tenant, save_tenant
from nika_tui.settings import Settings
from tests.engine.reset_kill import kill_inside
from tests.engine.strategy_a_seed import recall_at_5, seed_history

if TYPE_CHECKING:  # qdrant_client is imported where it is used (decision 172)
    from nika_tui.services.vectors.client import ClientVectorStore
    from nika_tui.services.vectors.client_generations import ClientGenerations

pytestmark = pytest.mark.embedder
TENANT, OTHER = "acme", "acme-2"


def _live(ctx: EngineContext, tenant: str = TENANT) -> int:
    return sum(ctx.vectors.count(tenant, layer) for layer in Layer)


def _open(path: Path, redis_client: redis.Redis, embedder) -> EngineContext:  # type: ignore[no-untyped-def]
    from qdrant_client import QdrantClient

    from nika_tui.services.vectors.client import ClientVectorStore

    store = ClientVectorStore(QdrantClient(path=str(path)), 384)
    return EngineContext(
        settings=Settings.from_env(),
        redis=redis_client,
        vectors=store,
        embedder=embedder,
    )


@pytest.fixture
def server_ctx(
    redis_client: redis.Redis,
    embedder,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> Iterator[EngineContext]:
    """Two tenants sharing the collections; acme's knowledge repo is a local work tree."""
    make_tenant(TENANT)
    make_tenant(OTHER)
    config = load_tenant(TENANT)
    save_tenant(config.model_copy(update={"knowledge_repo": str(tmp_path / "knowledge")}))
    ctx = _open(tmp_path / "qdrant-local", redis_client, embedder)
    yield ctx
    ctx.vectors.close()


def test_reset_on_a_server_switches_only_that_tenant(
    server_ctx: EngineContext,
    redis_client: redis.Redis,
    embedder,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    seeded = seed_history(server_ctx, TENANT)
    other = seed_history(server_ctx, OTHER)
    assert recall_at_5(server_ctx, TENANT) == 1.0
    semantic_before = server_ctx.vectors.count(TENANT, Layer.SEMANTIC)

    result = reset(server_ctx, TENANT)

    assert result["store"] == "server" and result["live_points_before"] == seeded.live
    assert _live(server_ctx) == result["live_points_after"] < seeded.live
    assert recall_at_5(server_ctx, TENANT) == 1.0
    assert server_ctx.vectors.retrieve(TENANT, Layer.SEMANTIC, seeded.retired) == []
    assert server_ctx.vectors.count(TENANT, Layer.SEMANTIC, PointFilter(
        equals={"status": Status.RETIRED.value})) == 0  # fmt: skip
    # The other tenant of the shared collections is untouched.
    assert _live(server_ctx, OTHER) == other.live
    assert recall_at_5(server_ctx, OTHER) == 1.0
    # Nothing deleted: acme's old points are still in the shared collection, behind the alias.
    store = _client_store(server_ctx)
    assert len(_shared_points(store, TENANT)) == semantic_before
    gens = _generations(store)
    assert gens.live(TENANT) == result["generation"] and gens.live(OTHER) is None
    assert gens.record(TENANT)["retired"] == ["original"]
    # Another process (a new client on the same storage) finds the new generation.
    store.close()
    again = _open(tmp_path / "qdrant-local", redis_client, embedder)
    try:
        assert _live(again) == result["live_points_after"]
        assert recall_at_5(again, TENANT) == 1.0
    finally:
        again.vectors.close()


def _client_store(ctx: EngineContext) -> ClientVectorStore:
    from nika_tui.services.vectors.client import ClientVectorStore

    assert isinstance(ctx.vectors, ClientVectorStore)
    return ctx.vectors


def _generations(store: ClientVectorStore) -> ClientGenerations:
    from nika_tui.services.vectors.client_generations import ClientGenerations

    return ClientGenerations(store)


def _shared_points(store: ClientVectorStore, tenant: str) -> list[str]:
    from qdrant_client import models

    match = models.MatchValue(value=tenant)
    flt = models.Filter(must=[models.FieldCondition(key="tenant_id", match=match)])
    records, _ = store.client.scroll("nika_semantic", scroll_filter=flt, limit=1000)
    return [str(r.id) for r in records]


def test_second_reset_keeps_the_retired_and_clears_the_half_built(
    server_ctx: EngineContext,
) -> None:
    seed_history(server_ctx, TENANT)
    first = reset(server_ctx, TENANT)
    store = _client_store(server_ctx)
    gens = _generations(store)
    # What a reset killed during its build leaves: a generation's collections, never switched.
    with gens.build(TENANT, "g20000101T000000000000Z") as half:
        assert half.count(TENANT, Layer.SEMANTIC) == 0
    second = reset(server_ctx, TENANT)

    assert second["previous_generation"] == first["generation"]
    assert second["removed_unfinished"] == ["g20000101T000000000000Z"]
    assert gens.record(TENANT)["retired"] == sorted([first["generation"], "original"])
    names = {c.name for c in store.client.get_collections().collections}
    assert gens.collection(TENANT, first["generation"], Layer.SEMANTIC) in names
    assert recall_at_5(server_ctx, TENANT) == 1.0


_CHILD = textwrap.dedent(
    """
    import os, sys
    import redis
    from qdrant_client import QdrantClient
    from nika_tui.engine.context import EngineContext
    from nika_tui.engine.reset import reset
    from nika_tui.services.embeddings import open_embedder
    from nika_tui.services.vectors.client import ClientVectorStore
    from nika_tui.settings import Settings

    store = ClientVectorStore(QdrantClient(path=sys.argv[1]), 384)
    settings = Settings.from_env()
    ctx = EngineContext(settings=settings, vectors=store,
                        embedder=open_embedder(settings),
                        redis=redis.Redis.from_url(sys.argv[2], decode_responses=True))
    reset(ctx, "acme")
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["build", "switch"])
def test_kill_9_mid_reset_on_a_server_leaves_one_whole_store(
    stage: str, server_ctx: EngineContext, redis_client: redis.Redis, redis_url: str,
    embedder, tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:  # fmt: skip
    seeded = seed_history(server_ctx, TENANT)
    server_ctx.vectors.close()  # local storage has one process at a time, as an Edge shard
    path = tmp_path / "qdrant-local"
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path), redis_url],
        env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip

    # Inside the stage, proven (tests/engine/reset_kill.py); at build, its collections are
    # created (the local engine lists a collection once its meta.json names it).
    def created() -> bool:
        try:
            return f"nika_g_{TENANT}_" in (path / "meta.json").read_text()
        except OSError:
            return False

    started = created if stage == "build" else None
    at_kill = kill_inside(child, TENANT, stage, started)
    ctx = _open(path, redis_client, embedder)
    try:
        store = _client_store(ctx)
        live = _live(ctx)
        switched = _generations(store).live(TENANT) is not None
        assert stage == "switch" or not switched  # only the switch stage changes what is live
        if not switched:
            assert live == seeded.live  # the old store, whole
        else:
            assert 0 < live < seeded.live  # the new one, whole
        assert recall_at_5(ctx, TENANT) == 1.0
        done = reset(ctx, TENANT)  # the next reset completes over whatever was left
        if not switched:
            assert done["removed_unfinished"] == [at_kill["generation"]]
        else:
            assert done["previous_generation"] == at_kill["generation"]
        assert _generations(store).live(TENANT) == done["generation"]
        assert recall_at_5(ctx, TENANT) == 1.0
    finally:
        ctx.vectors.close()
