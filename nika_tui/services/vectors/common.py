"""What both vector adapters share: vector names, indexed keys, input checks, BM25 encoding.

Both adapters must rank the same way, so the sparse encoding (Qdrant Edge's built-in BM25),
the fusion constant and the prefetch depth are defined once, here.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nika_tui.domain.memory import Layer
from nika_tui.domain.ports import PointFilter, VectorPoint
from nika_tui.domain.tenant_id import check_tenant_id
from nika_tui.errors import ValidationFailed

DENSE = "dense"
"""Name of the dense (cosine) vector."""

SPARSE = "bm25"
"""Name of the sparse BM25 vector (IDF modifier: the store computes IDF over the corpus)."""

INDEXED_KEYS: tuple[str, ...] = (
    "tenant_id",
    "layer",
    "status",
    "project_id",
    "job_id",
    "task_id",
    "domain",
    "action_type",
    "content_hash",
    "kind",
)
"""Top-level payload keys with a keyword index: every key recall, supersede or ingest filter by.

``kind`` (``digest`` on a reset's condensed memories, absent elsewhere): every retirement looks
for the digests condensing the retired memory; unindexed, that scan cost ~330 ms per layer at
50,000 points (measured), indexed it reads the few digests only."""

RRF_K = 60
"""Reciprocal rank fusion constant (score = sum of 1 / (k + rank)); 60 is the usual value."""

PREFETCH_FACTOR = 4
PREFETCH_MIN = 50
"""Each hybrid prefetch fetches max(limit * 4, 50) candidates before fusion."""


@dataclass(frozen=True, slots=True)
class PreparedPoint:
    """A validated point, ready for either adapter."""

    id: str
    vector: list[float]
    sparse_indices: list[int]
    sparse_values: list[float]
    payload: dict[str, Any]


class SparseEncoder:
    """BM25 sparse vectors from Qdrant Edge's built-in tokenizer (no model download).

    Documents get term-frequency weights, queries weight 1.0 per unique token; the IDF part is
    applied by the store (``Modifier.Idf``), so both adapters score the same way.
    """

    def __init__(self) -> None:
        from qdrant_edge import Bm25

        self._bm25 = Bm25()

    def document(self, text: str) -> tuple[list[int], list[float]]:
        """Sparse vector of a stored text."""
        vec = self._bm25.embed_document(text)
        return list(vec.indices), [float(v) for v in vec.values]

    def query(self, text: str) -> tuple[list[int], list[float]]:
        """Sparse vector of a query (may be empty: only stop words)."""
        vec = self._bm25.embed_query(text)
        return list(vec.indices), [float(v) for v in vec.values]


def check_layer(layer: Layer | str) -> Layer:
    """``layer`` as a :class:`Layer`, or a clear error."""
    try:
        return Layer(layer)
    except ValueError:
        raise ValidationFailed(
            f"invalid layer {layer!r}", "use one of: " + ", ".join(m.value for m in Layer)
        ) from None


def check_vector(vector: Sequence[float], dimension: int, what: str) -> list[float]:
    """A finite, non-zero vector of the store's dimension, as a list."""
    # numpy: a Python loop over 384 floats per point cost more than the store's own insert.
    try:
        array = np.asarray(vector, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationFailed(f"{what} is not a list of numbers", "re-embed the text") from None
    if array.shape != (dimension,):
        raise ValidationFailed(
            f"{what} has {array.size} dimensions, the store holds {dimension}",
            "embed with the same model the store was created with",
        )
    if not np.isfinite(array).all() or not array.any():
        raise ValidationFailed(f"{what} is zero or not finite", "re-embed the text")
    values: list[float] = array.tolist()
    return values


def check_point_id(point_id: str) -> str:
    """Point ids are UUID strings (Qdrant accepts UUIDs or integers; we use UUIDs only)."""
    try:
        return str(uuid.UUID(str(point_id)))
    except ValueError:
        raise ValidationFailed(
            f"invalid point id {point_id!r}", "point ids are UUIDs (e.g. uuid.uuid4())"
        ) from None


def prepare_points(
    tenant_id: str,
    layer: Layer,
    points: Sequence[VectorPoint],
    dimension: int,
    encoder: SparseEncoder,
) -> list[PreparedPoint]:
    """Validate points for ``tenant_id``/``layer`` and compute their BM25 vectors.

    The payload's ``tenant_id`` and ``layer`` are forced to the call's: a payload that names
    another tenant is refused, so no call path can write into the wrong tenant.

    Raises:
        ValidationFailed: a point has a bad id, vector, or a payload naming another tenant/layer.
    """
    prepared: list[PreparedPoint] = []
    for point in points:
        pid = check_point_id(point.id)
        payload = dict(point.payload)
        for key, expected in (("tenant_id", tenant_id), ("layer", layer.value)):
            given = payload.get(key, expected)
            if given != expected:
                raise ValidationFailed(
                    f"point {pid} has {key}={given!r} but is written to {key}={expected!r}",
                    "write each point through the tenant and layer it belongs to",
                )
            payload[key] = expected
        payload.setdefault("text", point.text)
        indices, values = encoder.document(point.text)
        prepared.append(
            PreparedPoint(
                pid, check_vector(point.vector, dimension, f"point {pid}"), indices, values, payload
            )
        )
    return prepared


def check_patch(tenant_id: str, layer: Layer, patch: Mapping[str, Any]) -> dict[str, Any]:
    """A payload patch may not move a point to another tenant or layer."""
    for key, expected in (("tenant_id", tenant_id), ("layer", layer.value)):
        if key in patch and patch[key] != expected:
            raise ValidationFailed(
                f"a payload patch cannot change {key} (to {patch[key]!r})",
                "write a new point in the other tenant or layer instead",
            )
    return dict(patch)


def matches_nothing(flt: PointFilter | None) -> bool:
    """An ``any_of`` with an empty list can match no point: short-circuit it."""
    return flt is not None and any(len(values) == 0 for values in flt.any_of.values())


def prefetch_limit(limit: int) -> int:
    """How many candidates each hybrid prefetch brings to the fusion."""
    return max(limit * PREFETCH_FACTOR, PREFETCH_MIN)


def check_limit(limit: int) -> int:
    """A positive result limit."""
    if limit < 1:
        raise ValidationFailed(f"limit must be at least 1 (got {limit})", "pass --limit 1 or more")
    return limit


def check_tenant(tenant_id: str) -> str:
    """Every vector call is tenant-scoped; the id also names a directory, so validate it."""
    return check_tenant_id(tenant_id)
