"""Qdrant Edge adapter: the real Qdrant engine in-process, one shard per tenant and layer.

:class:`EdgeVectorStore` holds the data operations (upsert, search, payloads, deletes). Where
shards live, how they open, the missing-shard markers and the durability rules are described
once, in :mod:`nika_tui.services.vectors.edge_shards` (its base class).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

from nika_tui.domain.memory import Layer
from nika_tui.domain.ports import PointFilter, ScoredPoint, VectorPoint
from nika_tui.errors import PointNotFound
from nika_tui.services.vectors.common import (
    DENSE,
    RRF_K,
    SPARSE,
    check_layer,
    check_limit,
    check_patch,
    check_point_id,
    check_tenant,
    check_vector,
    matches_nothing,
    prefetch_limit,
    prepare_points,
)
from nika_tui.services.vectors.edge_codec import (
    CONFIG_FILE,
    pack_payload,
    translated,
    unpack_payload,
)
from nika_tui.services.vectors.edge_maintenance import EdgeMaintenance


class EdgeVectorStore(EdgeMaintenance):
    """:class:`~nika_tui.domain.ports.VectorStore` on Qdrant Edge shards under ``root``.

    Shard handling is :class:`~nika_tui.services.vectors.edge_shards.EdgeShards`, index
    maintenance :class:`~nika_tui.services.vectors.edge_maintenance.EdgeMaintenance`.
    """

    @staticmethod
    def _scored(point: Any, score: float | None = None) -> ScoredPoint:
        vector = None
        if isinstance(point.vector, dict) and DENSE in point.vector:
            vector = list(point.vector[DENSE])
        return ScoredPoint(
            id=str(point.id),
            score=float(point.score) if score is None else score,
            payload=unpack_payload(dict(point.payload or {})),
            vector=vector,
        )

    def upsert(self, tenant_id: str, layer: Layer, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points; on disk (WAL + flushed segments) when this returns."""
        layer = check_layer(layer)
        if not points:
            return
        prepared = prepare_points(
            check_tenant(tenant_id), layer, points, self._dimension, self._encoder
        )
        from qdrant_edge import Point, SparseVector, UpdateOperation

        shard = self._shard(tenant_id, layer, create=True)
        where = self._where(tenant_id, layer)
        with translated("upsert", where):
            shard.update(
                UpdateOperation.upsert_points(
                    [
                        Point(
                            p.id,
                            {
                                DENSE: p.vector,
                                SPARSE: SparseVector(p.sparse_indices, p.sparse_values),
                            },
                            pack_payload(p.payload),
                        )
                        for p in prepared
                    ]
                )
            )
        self._after_write(shard, where)

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
        query = check_vector(vector, self._dimension, "query vector")
        check_limit(limit)
        shard = self._shard(tenant_id, layer, create=False)
        if shard is None or matches_nothing(flt):
            return []
        from qdrant_edge import Query, QueryRequest

        request = QueryRequest(
            limit=limit,
            query=Query.Nearest(query, using=DENSE),
            filter=self._filter(tenant_id, flt),
            with_payload=True,
            with_vector=[DENSE] if with_vectors else False,
        )
        with translated("search", self._where(tenant_id, check_layer(layer))):
            return [self._scored(p) for p in shard.query(request)]

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
        """Dense + BM25 prefetches fused with RRF in one Qdrant query; ``score`` is fused."""
        query = check_vector(vector, self._dimension, "query vector")
        check_limit(limit)
        shard = self._shard(tenant_id, layer, create=False)
        if shard is None or matches_nothing(flt):
            return []
        from qdrant_edge import Fusion, Prefetch, Query, QueryRequest, SearchParams, SparseVector

        qfilter = self._filter(tenant_id, flt)
        depth = prefetch_limit(limit)
        dense = Query.Nearest(query, using=DENSE)
        params = SearchParams(hnsw_ef=hnsw_ef) if hnsw_ef else None
        prefetches = [Prefetch(limit=depth, query=dense, filter=qfilter, params=params)]
        indices, values = self._encoder.query(text)
        if indices:  # a query of stop words only has no BM25 side; dense alone is fused
            prefetches.append(
                Prefetch(
                    limit=depth,
                    query=Query.Nearest(SparseVector(indices, values), using=SPARSE),
                    filter=qfilter,
                )
            )
        request = QueryRequest(
            limit=limit,
            query=cast(Any, Fusion.Rrf(k=RRF_K)),  # the stub omits the nested class
            prefetches=prefetches,
            filter=qfilter,
            with_payload=True,
            with_vector=[DENSE] if with_vectors else False,
        )
        with translated("search", self._where(tenant_id, check_layer(layer))):
            return [self._scored(p) for p in shard.query(request)]

    def retrieve(
        self, tenant_id: str, layer: Layer, ids: Sequence[str], with_vectors: bool = False
    ) -> list[ScoredPoint]:
        """Points by id in the order asked (missing ids skipped); ``score`` is 1.0."""
        wanted = list(dict.fromkeys(check_point_id(i) for i in ids))
        shard = self._shard(tenant_id, layer, create=False)
        if shard is None or not wanted:
            return []
        with translated("retrieve", self._where(tenant_id, check_layer(layer))):
            records = shard.retrieve(
                [uuid.UUID(i) for i in wanted],
                with_payload=True,
                with_vector=[DENSE] if with_vectors else False,
            )
        found = {str(r.id): self._scored(r, 1.0) for r in records}
        # The shard is the tenant's own, but check anyway: isolation never rests on one guard.
        return [
            found[i]
            for i in wanted
            if i in found and found[i].payload.get("tenant_id") == tenant_id
        ]

    def set_payload(
        self, tenant_id: str, layer: Layer, point_id: str, patch: Mapping[str, Any]
    ) -> None:
        """Merge ``patch`` into one point's payload.

        Raises:
            PointNotFound: no such point in this tenant and layer.
        """
        layer = check_layer(layer)
        pid = check_point_id(point_id)
        values = check_patch(check_tenant(tenant_id), layer, patch)
        if not self.retrieve(tenant_id, layer, [pid]):
            raise PointNotFound(
                f"no memory {pid} in tenant {tenant_id!r} ({layer.value})",
                "list ids with `nika memory recall --json`",
            )
        from qdrant_edge import UpdateOperation

        shard = self._shard(tenant_id, layer, create=False)
        where = self._where(tenant_id, layer)
        with translated("set_payload", where):
            shard.update(UpdateOperation.set_payload([uuid.UUID(pid)], pack_payload(values)))
        self._after_write(shard, where)

    def delete(self, tenant_id: str, layer: Layer, ids: Sequence[str]) -> None:
        """Remove points from the live index (purge only, after archiving)."""
        wanted: list[Any] = [uuid.UUID(check_point_id(i)) for i in ids]
        shard = self._shard(tenant_id, layer, create=False)
        if shard is None or not wanted:
            return
        from qdrant_edge import UpdateOperation

        where = self._where(tenant_id, check_layer(layer))
        with translated("delete", where):
            shard.update(UpdateOperation.delete_points(wanted))
        self._after_write(shard, where)

    def scroll(
        self,
        tenant_id: str,
        layer: Layer,
        flt: PointFilter | None = None,
        batch: int = 256,
        with_vectors: bool = False,
    ) -> Iterator[ScoredPoint]:
        """Every point matching ``flt``, in id order, ``batch`` at a time; ``score`` is 1.0."""
        check_limit(batch)
        shard = self._shard(tenant_id, layer, create=False)
        if shard is None or matches_nothing(flt):
            return
        from qdrant_edge import ScrollRequest

        qfilter = self._filter(tenant_id, flt)
        where = self._where(tenant_id, check_layer(layer))
        offset: Any = None
        while True:
            with translated("scroll", where):
                records, offset = shard.scroll(
                    ScrollRequest(
                        offset=offset,
                        limit=batch,
                        filter=qfilter,
                        with_payload=True,
                        with_vector=[DENSE] if with_vectors else False,
                    )
                )
            for record in records:
                yield self._scored(record, 1.0)
            if offset is None:
                return

    def count(self, tenant_id: str, layer: Layer, flt: PointFilter | None = None) -> int:
        """Exact number of points matching ``flt``."""
        shard = self._shard(tenant_id, layer, create=False)
        if shard is None or matches_nothing(flt):
            return 0
        from qdrant_edge import CountRequest

        with translated("count", self._where(tenant_id, check_layer(layer))):
            return int(shard.count(CountRequest(exact=True, filter=self._filter(tenant_id, flt))))

    def tenants(self) -> list[str]:
        """Tenant ids that have a shard on disk (for audits and REM passes)."""
        if not self._root.is_dir():
            return []
        from nika_tui.domain.tenant_id import TENANT_ID_PATTERN

        return sorted(
            p.name
            for p in self._root.iterdir()
            if p.is_dir()
            and TENANT_ID_PATTERN.fullmatch(p.name)
            and any((self._path(p.name, layer) / CONFIG_FILE).exists() for layer in Layer)
        )
