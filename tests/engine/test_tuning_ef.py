"""HNSW ``ef`` in `nika tune recall`, on a shard with a real HNSW index (built by the index
maintenance's child): the store honours it, the tuner measures each value of its grid on its
own fetch, and keeps the ef in force when a wider one gains less than 2x the noise."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

import numpy as np
import pytest

from nika_tui.domain.memory import Layer
from nika_tui.domain.ports import VectorPoint
from nika_tui.domain.recall_params import Judged, RecallParams
from nika_tui.domain.tenant import AutoMode
from nika_tui.engine.context import EngineContext
from nika_tui.engine.index_maintenance import default_min_pending
from nika_tui.services.config_store import load_tenant, save_tenant
from nika_tui.services.recall_params import adopt_params, read_params
from nika_tui.services.relevance_log import tuning_dir
from nika_tui.services.vectors.edge import EdgeVectorStore
from nika_tui.tuning.tuner import tune
from tests.plugins.debt import make_record


class TableEmbedder:
    """Embeds each query with the vector it was built around."""

    dimension = 384
    name = "table"

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.table[t] for t in texts]


def _clustered(rng: random.Random, shared: list[float]) -> list[float]:
    """Half shared direction, half isotropic noise: cosines near 0.5 (above every floor the
    tuner tries) while the nearest neighbours stay as hard for HNSW as random data."""
    g = [rng.gauss(0, 1) for _ in range(384)]
    gn = sum(x * x for x in g) ** 0.5
    v = [0.5**0.5 * s + 0.5**0.5 * x / gn for s, x in zip(shared, g, strict=True)]
    norm = sum(x * x for x in v) ** 0.5
    return [x / norm for x in v]


@pytest.mark.slow
def test_ef_is_measured_on_an_indexed_shard_and_kept_within_noise(debt_ctx: EngineContext) -> None:
    store = debt_ctx.vectors
    assert isinstance(store, EdgeVectorStore)
    rng = random.Random(3)
    shared = [rng.gauss(0, 1) for _ in range(384)]
    norm = sum(x * x for x in shared) ** 0.5
    shared = [x / norm for x in shared]
    points = []
    for i in range(default_min_pending(384) + 300):
        rec = make_record("acme", f"memory {i}")
        points.append(VectorPoint(rec.id, _clustered(rng, shared), rec.text, rec.to_payload()))
    store.upsert("acme", Layer.SEMANTIC, points)
    store.flush()
    assert store.optimize_offline("acme", Layer.SEMANTIC, timeout_s=900)
    assert store.pending_index("acme", Layer.SEMANTIC) == 0, "the shard is HNSW-indexed"
    matrix = np.array([p.vector for p in points], dtype=np.float32)
    table: dict[str, list[float]] = {}
    labels = []
    for i in range(40):
        q = _clustered(rng, shared)
        table[f"q{i}"] = q
        # The label: the exact nearest memory (brute force), as a person would pick it.
        best = int(np.argmax(matrix @ np.array(q, dtype=np.float32)))
        labels.append(Judged(query=f"q{i}", useful=frozenset({points[best].id})))
    # The store honours ef: a walk one node wide misses exact neighbours a wide one finds.
    exact = [next(iter(j.useful)) for j in labels]
    for ef, at_least, at_most in ((1, 0, 36), (512, 38, 40)):
        found = sum(
            store.search_hybrid("acme", Layer.SEMANTIC, table[f"q{i}"], f"q{i}", limit=1,
                                hnsw_ef=ef)[0].id == exact[i]
            for i in range(len(labels))
        )  # fmt: skip
        assert at_least <= found <= at_most, (ef, found)
    debt_ctx.embedder = TableEmbedder(table)
    config = load_tenant("acme")
    actions = config.auto_actions.model_copy(update={"tune": AutoMode.AUTONOMOUS})
    save_tenant(config.model_copy(update={"auto_actions": actions}))
    # ef 128 in force: an HNSW graph is not built the same twice (random ids, the optimizer's
    # threads), and at ef 64 runs found 37 to 40 of the 40 exact neighbours, so a wider ef
    # sometimes gained past the noise; at 128 runs found 38 to 40, within it.
    adopt_params(debt_ctx.redis, "acme", RecallParams(palace_floor=0.20, hnsw_ef=128), "t0")

    summary = tune(debt_ctx, "acme", trials=30, seed=1, judged=labels)

    # Every ef of the grid was measured on its own fetch (a trial each, logged) ...
    lines = (tuning_dir("acme") / "optimisation.jsonl").read_text().splitlines()
    tried = {json.loads(ln)["params"]["hnsw_ef"] for ln in lines if '"trial"' in ln}
    assert len(tried) >= 3 and tried <= {0, 64, 128, 256, 512}
    # ... and at recall@5 on 7,000 points the ef in force already finds the neighbours: what a
    # wider ef adds is within 2x the noise, so it is kept (measured; decision 244).
    assert summary["baseline_metric"] >= 0.9  # 38-40 of 40 in the runs measured
    assert summary["action"] == "kept" and not summary["past_2x_noise"]
    assert read_params(debt_ctx.redis, "acme")[0].hnsw_ef == 128
