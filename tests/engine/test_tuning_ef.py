"""HNSW ``ef`` in `nika tune recall`: on a shard with a real HNSW index (built by the index
maintenance's child), a breadth that finds the labelled memories is found and adopted over one
too narrow, and recall then searches with it."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from nika_tui.domain.memory import Layer
from nika_tui.domain.ports import VectorPoint
from nika_tui.domain.recall_params import Judged, RecallParams
from nika_tui.domain.tenant import AutoMode
from nika_tui.engine.context import EngineContext
from nika_tui.engine.index_maintenance import default_min_pending
from nika_tui.services.config_store import load_tenant, save_tenant
from nika_tui.services.recall_params import adopt_params, read_params
from nika_tui.services.vectors.edge import EdgeVectorStore
from nika_tui.tuning.tuner import tune
from tests.plugins.debt import at_cosine, make_record


class TableEmbedder:
    """Embeds each query with the vector it was built around."""

    dimension = 384
    name = "table"

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.table[t] for t in texts]


def _gauss(rng: random.Random) -> list[float]:
    v = [rng.gauss(0, 1) for _ in range(384)]
    norm = sum(x * x for x in v) ** 0.5
    return [x / norm for x in v]


@pytest.mark.slow
def test_a_wider_ef_is_found_and_adopted_on_an_indexed_shard(debt_ctx: EngineContext) -> None:
    store = debt_ctx.vectors
    assert isinstance(store, EdgeVectorStore)
    rng = random.Random(3)
    # Isotropic random vectors, the hardest case for HNSW: a narrow ef misses neighbours.
    points = []
    for i in range(default_min_pending(384) + 300):
        rec = make_record("acme", f"memory {i}")
        points.append(VectorPoint(rec.id, _gauss(rng), rec.text, rec.to_payload()))
    store.upsert("acme", Layer.SEMANTIC, points)
    store.flush()
    assert store.optimize_offline("acme", Layer.SEMANTIC, timeout_s=900)
    assert store.pending_index("acme", Layer.SEMANTIC) == 0, "the shard is HNSW-indexed"
    table: dict[str, list[float]] = {}
    labels = []
    for i, target in enumerate(rng.sample(points, 24)):
        # Its memory at cosine 0.26, every other one near 0 (about 0.22 at most among 7,000):
        # the greedy graph walk rarely passes by it unless it looks wide.
        table[f"q{i}"] = at_cosine(list(target.vector), 0.26, rng)
        labels.append(Judged(query=f"q{i}", useful=frozenset({target.id})))
    debt_ctx.embedder = TableEmbedder(table)
    config = load_tenant("acme")
    actions = config.auto_actions.model_copy(update={"tune": AutoMode.AUTONOMOUS})
    save_tenant(config.model_copy(update={"auto_actions": actions}))
    narrow = RecallParams(palace_floor=0.20, hnsw_ef=64)
    adopt_params(debt_ctx.redis, "acme", narrow, "2026-12-03T00:00:00+00:00")

    summary = tune(debt_ctx, "acme", trials=24, seed=1, judged=labels)

    assert summary["baseline_metric"] < 0.9, "ef 64 misses labelled memories on this index"
    assert summary["action"] == "adopted", summary
    assert summary["gain"] > 2 * summary["noise_sd"]
    params, adopted = read_params(debt_ctx.redis, "acme")
    assert adopted and params.hnsw_ef in (0, 128, 256, 512), "wider than 64 (0: Qdrant's 100)"


def test_ef_is_kept_and_bounded() -> None:
    assert RecallParams.from_fields({"hnsw_ef": "64"}).hnsw_ef == 64
    assert RecallParams(hnsw_ef=2).clamped().hnsw_ef == 4
    assert RecallParams(hnsw_ef=-1).clamped().hnsw_ef == 0
