"""kill -9 in the middle of `nika compress --reset`: the old store or the new one, never neither.

A real child process runs the reset (service down, so it opens the stores itself); the test
waits for the journal to reach a stage, then SIGKILLs it, reopens the store and checks that a
whole generation is live and answers every fixed query.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from nika_tui.domain.memory import Layer
from nika_tui.engine.context import EngineContext
from nika_tui.engine.reset import journal_path
from nika_tui.paths import data_dir
from nika_tui.services.config_store import load_tenant, save_tenant
from nika_tui.services.vectors.edge import EdgeVectorStore
from nika_tui.settings import Settings
from tests.engine.strategy_a_seed import recall_at_5, seed_history
from tests.helpers import retry_until

pytestmark = [pytest.mark.embedder, pytest.mark.slow]
TENANT = "acme"


def _stage() -> str:
    try:
        return str(json.loads(journal_path(TENANT, Settings.from_env().roots).read_text())["stage"])
    except (OSError, ValueError, KeyError):
        return ""


def _ctx(redis_url: str, embedder) -> EngineContext:  # type: ignore[no-untyped-def]
    store = EdgeVectorStore(data_dir() / "qdrant", 384, flush_writes=False)
    return EngineContext(env=dict(os.environ), settings=Settings.from_env(),
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
    order = ["started", "snapshot", "compress", "build", "switch", "done"]
    retry_until(
        lambda: _stage() in order[order.index(stage):] or child.poll() is not None,
        timeout=240, interval=0.005, what=f"reset stage {stage}",
    )  # fmt: skip
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    ctx = _ctx(redis_url, embedder)
    try:
        store = ctx.vectors
        assert isinstance(store, EdgeVectorStore)
        live = sum(store.count(TENANT, layer) for layer in Layer)
        if store.generation(TENANT) is None:
            assert live == seeded.live  # the old store, whole
        else:
            assert 0 < live < seeded.live  # the new one, whole
        assert recall_at_5(ctx, TENANT) == 1.0
        if stage == "build":
            # The next reset clears what the killed one left half-built and completes.
            from nika_tui.engine.reset import reset

            done = reset(ctx, TENANT)
            assert store.generation(TENANT) == done["generation"]
            assert recall_at_5(ctx, TENANT) == 1.0
    finally:
        ctx.vectors.close()
