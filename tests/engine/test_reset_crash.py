"""kill -9 in the middle of `nika compress --reset`: the old store or the new one, never neither.

A real child process runs the reset (service down, so it opens the stores itself); the test
freezes it inside a stage, proves it is there (journal, and the stage's own work begun), kills
it (``tests/engine/reset_kill.py``), reopens the store and checks that a whole generation is
live and answers every fixed query; then the next reset recovers what the killed one left.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from nika_tui.domain.memory import Layer
from nika_tui.engine.context import EngineContext
from nika_tui.paths import data_dir
from nika_tui.services.config_store import load_tenant, save_tenant
from nika_tui.services.vectors.edge import EdgeVectorStore
from nika_tui.settings import Settings
from tests.engine.reset_kill import exists, kill_inside
from tests.engine.strategy_a_seed import recall_at_5, seed_history

pytestmark = [pytest.mark.embedder, pytest.mark.slow]
TENANT = "acme"


def _ctx(redis_url: str, embedder) -> EngineContext:  # type: ignore[no-untyped-def]
    store = EdgeVectorStore(data_dir() / "qdrant", 384, flush_writes=False)
    return EngineContext(settings=Settings.from_env(),
                         redis=redis.Redis.from_url(redis_url, decode_responses=True),
                         vectors=store, embedder=embedder)  # fmt: skip


@pytest.mark.parametrize("stage", ["snapshot", "build", "switch"])
def test_kill_9_mid_reset_leaves_one_whole_store(
    stage: str,
    make_tenant,
    redis_url: str,
    embedder,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    make_tenant(TENANT)
    repo = tmp_path / "knowledge"
    save_tenant(load_tenant(TENANT).model_copy(update={"knowledge_repo": str(repo)}))
    ctx = _ctx(redis_url, embedder)
    seeded = seed_history(ctx, TENANT)
    ctx.vectors.close()
    child = subprocess.Popen(
        [sys.executable, "-m", "nika_tui", "compress", "--tenant", TENANT, "--reset", "--json"],
        env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    # The stage's own work, begun: the snapshot's staging directory, the generation's shards.
    started = {
        "snapshot": exists(Settings.from_env().roots.tenant_data_dir(TENANT)
                           / "snapshots" / ".*.partial-*"),
        "build": exists(data_dir() / "qdrant" / TENANT / "gens" / "g*"),
    }.get(stage)  # fmt: skip
    at_kill = kill_inside(child, TENANT, stage, started)
    ctx = _ctx(redis_url, embedder)
    try:
        store = ctx.vectors
        assert isinstance(store, EdgeVectorStore)
        live = sum(store.count(TENANT, layer) for layer in Layer)
        switched = store.generation(TENANT) is not None
        assert stage == "switch" or not switched  # only the switch stage changes what is live
        if not switched:
            assert live == seeded.live  # the old store, whole
        else:
            assert 0 < live < seeded.live  # the new one, whole
        assert recall_at_5(ctx, TENANT) == 1.0
        # Recovery: the next reset clears what the killed one left, and completes.
        from nika_tui.engine.reset import reset

        done = reset(ctx, TENANT)
        if stage == "snapshot":
            assert len(done["removed_partial_snapshots"]) == 1
            assert not list(Path(str(at_kill["snapshot"])).parent.glob(".*.partial-*"))
        if stage == "build" or (stage == "switch" and not switched):
            assert done["removed_unfinished"] == [at_kill["generation"]]
        if switched:
            assert done["previous_generation"] == at_kill["generation"]
        assert store.generation(TENANT) == done["generation"]
        assert recall_at_5(ctx, TENANT) == 1.0
    finally:
        ctx.vectors.close()
