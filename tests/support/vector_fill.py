"""Random unit vectors written into (or built for) a tenant's semantic shard."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from nika_tui.domain.memory import Layer
from nika_tui.domain.ports import VectorPoint

if TYPE_CHECKING:
    from nika_tui.services.vectors.edge import EdgeVectorStore

DIM = 384
INDEXED_N = 7000
"""Above Edge's indexing threshold: a shard this big builds its HNSW graph when optimized."""
SEM = Layer.SEMANTIC


def fill(store: EdgeVectorStore, tenant_id: str, n: int, seed: int = 0) -> list[VectorPoint]:
    """Write ``n`` random unit vectors with payloads into the tenant's semantic shard."""
    import numpy as np

    rng = np.random.default_rng(seed)
    written: list[VectorPoint] = []
    for start in range(0, n, 1000):
        vecs = rng.normal(size=(min(1000, n - start), DIM)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        batch = [
            VectorPoint(
                str(uuid.uuid4()),
                v.tolist(),
                f"fact {start + i}: service host{i % 50} deploys on day {i % 7}",
                {"status": "current", "project_id": f"p{i % 3}"},
            )
            for i, v in enumerate(vecs)
        ]
        store.upsert(tenant_id, SEM, batch)
        written += batch
    return written


def fill_points(n: int) -> list[VectorPoint]:
    """``n`` fresh points (not written)."""
    import numpy as np

    rng = np.random.default_rng(99)
    out = []
    for _ in range(n):
        v = rng.normal(size=DIM)
        out.append(VectorPoint(str(uuid.uuid4()), (v / np.linalg.norm(v)).tolist(), "x", {}))
    return out
