"""Ports: the Protocols the engine depends on. Adapters in ``services/`` implement them.

Every vector-store call takes a tenant: there is no call path without one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from nika_tui.domain.memory import Layer
from nika_tui.domain.verdicts import Fact, Judgement


@dataclass(frozen=True, slots=True)
class PointFilter:
    """Conjunction of keyword matches on top-level payload keys.

    ``equals``: key must equal value. ``any_of``: key must equal one of the values.
    ``exclude_ids``: points never to return (e.g. a new memory searching for its own
    neighbours), dropped by the store before it reads their payloads.
    """

    equals: Mapping[str, str] = field(default_factory=dict)
    any_of: Mapping[str, Sequence[str]] = field(default_factory=dict)
    exclude_ids: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class VectorPoint:
    """A point to store: id (UUID string), dense vector, text (for BM25) and payload."""

    id: str
    vector: Sequence[float]
    text: str
    payload: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ScoredPoint:
    """A search hit. ``score`` is cosine for dense search, the fused score for hybrid."""

    id: str
    score: float
    payload: Mapping[str, Any]
    vector: Sequence[float] | None = None


@runtime_checkable
class VectorStore(Protocol):
    """Tenant-scoped vector storage (Qdrant Edge embedded, or a Qdrant server)."""

    def upsert(self, tenant_id: str, layer: Layer, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points; durable when this returns."""
        ...

    def search_dense(
        self,
        tenant_id: str,
        layer: Layer,
        vector: Sequence[float],
        flt: PointFilter | None = None,
        limit: int = 10,
        with_vectors: bool = False,
    ) -> list[ScoredPoint]:
        """Nearest neighbours by cosine; ``score`` is the cosine similarity."""
        ...

    def search_hybrid(
        self,
        tenant_id: str,
        layer: Layer,
        vector: Sequence[float],
        text: str,
        flt: PointFilter | None = None,
        limit: int = 10,
        with_vectors: bool = False,
        hnsw_ef: int | None = None,
    ) -> list[ScoredPoint]:
        """Dense + BM25 prefetches fused with reciprocal rank fusion, inside Qdrant.

        ``hnsw_ef``: the HNSW search breadth of the dense side (``None``: the store's default;
        it matters only on shards that have an HNSW index, the others are searched exactly).
        """
        ...

    def retrieve(
        self, tenant_id: str, layer: Layer, ids: Sequence[str], with_vectors: bool = False
    ) -> list[ScoredPoint]:
        """Points by id (missing ids are skipped); ``score`` is 1.0."""
        ...

    def set_payload(
        self, tenant_id: str, layer: Layer, point_id: str, patch: Mapping[str, Any]
    ) -> None:
        """Merge ``patch`` into one point's payload."""
        ...

    def delete(self, tenant_id: str, layer: Layer, ids: Sequence[str]) -> None:
        """Remove points from the live index (purge only, after archiving)."""
        ...

    def scroll(
        self,
        tenant_id: str,
        layer: Layer,
        flt: PointFilter | None = None,
        batch: int = 256,
        with_vectors: bool = False,
    ) -> Iterator[ScoredPoint]:
        """Every point matching ``flt``."""
        ...

    def count(self, tenant_id: str, layer: Layer, flt: PointFilter | None = None) -> int:
        """Exact number of points matching ``flt``."""
        ...

    def close(self) -> None:
        """Flush and release files."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Text → unit-norm dense vectors."""

    @property
    def dimension(self) -> int: ...

    @property
    def name(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One normalised vector per text, in order."""
        ...


@runtime_checkable
class Judge(Protocol):
    """Compares an old and a new fact; returns a verdict and a reason, nothing else."""

    @property
    def name(self) -> str: ...

    def judge(self, old: Fact, new: Fact) -> Judgement: ...
