"""qdrant-client adapter for a Qdrant server or cluster (``QDRANT_URL``).

One collection per layer (``nika_semantic``, ``nika_episodic``) shared by all tenants, with a
``tenant_id`` keyword index marked ``is_tenant=True`` (Qdrant then co-locates each tenant's
points) and HNSW built per tenant (``payload_m=16, m=0``, as Qdrant's multitenancy guide
advises). Every read and write carries a ``tenant_id`` filter or payload; there is no call
without one. Writes use ``wait=True``: the server has applied and logged them when they return.
Ranking matches the Edge adapter: same dense/BM25 vectors, same prefetch depth and RRF k.

A tenant that went through a fresh start (strategy A) has its own collections, one per layer,
reached through the aliases ``{prefix}t_{tenant}_{layer}`` (:mod:`.client_generations`); every
call for that tenant goes through them. The aliases are read once per process and again after a
switch made by this process: the switch runs in the tenant's single writer.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import httpx
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ApiException, ResponseHandlingException

from nika_tui.domain.memory import Layer
from nika_tui.domain.ports import PointFilter, ScoredPoint, VectorPoint
from nika_tui.errors import PointNotFound, StoreUnavailable
from nika_tui.services.vectors.common import (
    DENSE,
    INDEXED_KEYS,
    RRF_K,
    SPARSE,
    SparseEncoder,
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

COLLECTION_PREFIX = "nika_"
TENANT_ALIAS_INFIX = "t_"
"""``{prefix}t_{tenant}_{layer}``: the alias of a tenant's own collection after a fresh start."""

# What qdrant-client raises over REST (the factory never enables gRPC): API errors (HTTP
# status), transport errors, and in local mode ValueError / KeyError for bad requests.
_CLIENT_ERRORS: tuple[type[BaseException], ...] = (
    ApiException,
    ResponseHandlingException,
    httpx.HTTPError,
    OSError,
    ValueError,
    KeyError,
)


@contextmanager
def _translated(action: str, collection: str) -> Iterator[None]:
    try:
        yield
    except _CLIENT_ERRORS as exc:
        raise StoreUnavailable(
            f"qdrant {action} failed on collection {collection!r}: {exc}",
            "check that the Qdrant server at QDRANT_URL is up (`nika doctor`), "
            "or unset QDRANT_URL to use the embedded store",
        ) from exc


class ClientVectorStore:
    """:class:`~nika_tui.domain.ports.VectorStore` on a Qdrant server through qdrant-client."""

    def __init__(
        self,
        client: QdrantClient,
        dimension: int,
        *,
        prefix: str = COLLECTION_PREFIX,
        pinned: Mapping[Layer, str] | None = None,
    ) -> None:
        """Args:
        client: a connected client (``QdrantClient(url=...)``, or ``":memory:"`` in tests).
        dimension: size of the dense vectors.
        prefix: collection name prefix (``nika_`` → ``nika_semantic``, ``nika_episodic``).
        pinned: every tenant reads and writes these collections, no alias is looked up, and
            :meth:`close` leaves the client open (a generation being built, on a shared client).
        """
        if dimension < 1:
            raise ValueError("dimension must be positive")
        self._client = client
        self._dimension = dimension
        self._prefix = prefix
        self._pinned = dict(pinned) if pinned is not None else None
        self._ready: set[str] = set()
        self._aliases: set[str] | None = None
        self._lock = threading.Lock()
        self._encoder = SparseEncoder()

    @property
    def client(self) -> QdrantClient:
        """The qdrant-client connection (shared with generation views)."""
        return self._client

    @property
    def prefix(self) -> str:
        """The collection name prefix."""
        return self._prefix

    @property
    def dimension(self) -> int:
        """Size of the dense vectors."""
        return self._dimension

    def collection(self, layer: Layer | str) -> str:
        """Collection name of ``layer``."""
        return f"{self._prefix}{check_layer(layer).value}"

    def tenant_alias(self, tenant_id: str, layer: Layer | str) -> str:
        """The alias of ``tenant_id``'s own collection of ``layer`` (after a fresh start)."""
        return f"{self._alias_head}{check_tenant(tenant_id)}_{check_layer(layer).value}"

    def refresh_aliases(self) -> None:
        """Read the server's aliases again at the next call (after a generation switch)."""
        with self._lock:
            self._aliases = None
            self._ready = {n for n in self._ready if not n.startswith(self._alias_head)}

    @property
    def _alias_head(self) -> str:
        return f"{self._prefix}{TENANT_ALIAS_INFIX}"

    def _routed(self, tenant_id: str, layer: Layer) -> str:
        """The collection (or alias) that holds ``tenant_id``'s points of ``layer``."""
        if self._pinned is not None:
            return self._pinned[layer]
        with self._lock:
            if self._aliases is None:
                with _translated("list aliases", self._prefix + "*"):
                    found = self._client.get_aliases().aliases
                head = self._alias_head
                self._aliases = {a.alias_name for a in found if a.alias_name.startswith(head)}
            aliases = self._aliases
        if not aliases:
            return self.collection(layer)
        alias = self.tenant_alias(tenant_id, layer)
        return alias if alias in aliases else self.collection(layer)

    def ensure_collections(self, tenant_id: str) -> list[str]:
        """Create ``tenant_id``'s collections of every layer now (a generation's alias
        targets must exist even for a layer with no point)."""
        return [n for layer in Layer if (n := self._ensure(tenant_id, layer, create=True))]

    def _ensure(self, tenant_id: str, layer: Layer | str, *, create: bool) -> str | None:
        """The collection holding the tenant's layer once it exists; ``None`` if absent and
        not ``create``."""
        layer = check_layer(layer)
        name = self._routed(check_tenant(tenant_id), layer)
        with self._lock:
            if name in self._ready:
                return name
            with _translated("open", name):
                if name.startswith(self._alias_head):
                    pass  # listed by the server's aliases: it exists, and was checked when built
                elif not self._client.collection_exists(name):
                    if not create:
                        return None
                    self._create(name)
                else:
                    self._check_existing(name)
            self._ready.add(name)
            return name

    def _create(self, name: str) -> None:
        self._client.create_collection(
            name,
            vectors_config={
                DENSE: models.VectorParams(size=self._dimension, distance=models.Distance.COSINE)
            },
            sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            # Per-tenant HNSW graphs, no global one: every query is tenant-filtered.
            hnsw_config=models.HnswConfigDiff(payload_m=16, m=0),
        )
        self._client.create_payload_index(
            name,
            "tenant_id",
            field_schema=models.KeywordIndexParams(
                type=models.KeywordIndexType.KEYWORD, is_tenant=True
            ),
            wait=True,
        )
        for field in INDEXED_KEYS:
            if field != "tenant_id":
                self._client.create_payload_index(
                    name, field, field_schema=models.PayloadSchemaType.KEYWORD, wait=True
                )

    def _check_existing(self, name: str) -> None:
        info = self._client.get_collection(name)
        vectors = info.config.params.vectors
        size = vectors[DENSE].size if isinstance(vectors, dict) and DENSE in vectors else None
        if size != self._dimension:
            raise StoreUnavailable(
                f"collection {name!r} holds {size}-dimension vectors, the embedder makes "
                f"{self._dimension}",
                "use the embedder the collection was built with, or another collection prefix",
            )

    @staticmethod
    def _filter(tenant_id: str, flt: PointFilter | None) -> models.Filter:
        must: list[models.Condition] = [
            models.FieldCondition(key="tenant_id", match=models.MatchValue(value=tenant_id))
        ]
        if flt is not None:
            for key, value in flt.equals.items():
                must.append(models.FieldCondition(key=key, match=models.MatchValue(value=value)))
            for key, values in flt.any_of.items():
                must.append(models.FieldCondition(key=key, match=models.MatchAny(any=list(values))))
            if flt.exclude_ids:
                skip = models.HasIdCondition(has_id=[check_point_id(i) for i in flt.exclude_ids])
                return models.Filter(must=must, must_not=[skip])
        return models.Filter(must=must)

    @staticmethod
    def _scored(point: Any, score: float | None = None) -> ScoredPoint:
        vector = None
        if isinstance(point.vector, dict) and DENSE in point.vector:
            vector = [float(v) for v in point.vector[DENSE]]
        return ScoredPoint(
            id=str(point.id),
            score=float(point.score) if score is None else score,
            payload=dict(point.payload or {}),
            vector=vector,
        )

    def upsert(self, tenant_id: str, layer: Layer, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points; applied by the server (``wait=True``) when this returns."""
        layer = check_layer(layer)
        if not points:
            return
        prepared = prepare_points(
            check_tenant(tenant_id), layer, points, self._dimension, self._encoder
        )
        name = self._ensure(tenant_id, layer, create=True)
        assert name is not None
        structs = [
            models.PointStruct(
                id=p.id,
                vector={
                    DENSE: p.vector,
                    SPARSE: models.SparseVector(indices=p.sparse_indices, values=p.sparse_values),
                },
                payload=p.payload,
            )
            for p in prepared
        ]
        with _translated("upsert", name):
            self._client.upsert(name, structs, wait=True)

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
        name = self._ensure(tenant_id, layer, create=False)
        if name is None or matches_nothing(flt):
            return []
        with _translated("search", name):
            result = self._client.query_points(
                name,
                query=query,
                using=DENSE,
                query_filter=self._filter(check_tenant(tenant_id), flt),
                limit=limit,
                with_payload=True,
                with_vectors=[DENSE] if with_vectors else False,
            )
        return [self._scored(p) for p in result.points]

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
        """Dense + BM25 prefetches fused with RRF on the server; ``score`` is fused."""
        query = check_vector(vector, self._dimension, "query vector")
        check_limit(limit)
        name = self._ensure(tenant_id, layer, create=False)
        if name is None or matches_nothing(flt):
            return []
        qfilter = self._filter(check_tenant(tenant_id), flt)
        depth = prefetch_limit(limit)
        params = models.SearchParams(hnsw_ef=hnsw_ef) if hnsw_ef else None
        prefetch = [
            models.Prefetch(query=query, using=DENSE, limit=depth, filter=qfilter, params=params)
        ]
        indices, values = self._encoder.query(text)
        if indices:
            prefetch.append(
                models.Prefetch(
                    query=models.SparseVector(indices=indices, values=values),
                    using=SPARSE,
                    limit=depth,
                    filter=qfilter,
                )
            )
        with _translated("search", name):
            result = self._client.query_points(
                name,
                prefetch=prefetch,
                query=models.RrfQuery(rrf=models.Rrf(k=RRF_K)),
                query_filter=qfilter,
                limit=limit,
                with_payload=True,
                with_vectors=[DENSE] if with_vectors else False,
            )
        return [self._scored(p) for p in result.points]

    def retrieve(
        self, tenant_id: str, layer: Layer, ids: Sequence[str], with_vectors: bool = False
    ) -> list[ScoredPoint]:
        """Points by id in the order asked; ids of other tenants are skipped like missing ones."""
        check_tenant(tenant_id)
        wanted = list(dict.fromkeys(check_point_id(i) for i in ids))
        name = self._ensure(tenant_id, layer, create=False)
        if name is None or not wanted:
            return []
        with _translated("retrieve", name):
            records = self._client.retrieve(
                name, wanted, with_payload=True, with_vectors=[DENSE] if with_vectors else False
            )
        # Retrieval by id cannot take a filter: the tenant check is here.
        found = {
            str(r.id): self._scored(r, 1.0)
            for r in records
            if (r.payload or {}).get("tenant_id") == tenant_id
        }
        return [found[i] for i in wanted if i in found]

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
        name = self._routed(tenant_id, layer)
        with _translated("set_payload", name):
            self._client.set_payload(name, payload=values, points=[pid], wait=True)

    def delete(self, tenant_id: str, layer: Layer, ids: Sequence[str]) -> None:
        """Remove this tenant's points with these ids (others' points are never touched)."""
        wanted = [check_point_id(i) for i in ids]
        name = self._ensure(tenant_id, layer, create=False)
        if name is None or not wanted:
            return
        selector = models.FilterSelector(
            filter=models.Filter(
                must=[
                    models.FieldCondition(
                        key="tenant_id", match=models.MatchValue(value=check_tenant(tenant_id))
                    ),
                    models.HasIdCondition(has_id=list(wanted)),
                ]
            )
        )
        with _translated("delete", name):
            self._client.delete(name, points_selector=selector, wait=True)

    def scroll(
        self,
        tenant_id: str,
        layer: Layer,
        flt: PointFilter | None = None,
        batch: int = 256,
        with_vectors: bool = False,
    ) -> Iterator[ScoredPoint]:
        """Every point matching ``flt``, ``batch`` at a time; ``score`` is 1.0."""
        check_limit(batch)
        name = self._ensure(tenant_id, layer, create=False)
        if name is None or matches_nothing(flt):
            return
        qfilter = self._filter(check_tenant(tenant_id), flt)
        offset: Any = None
        while True:
            with _translated("scroll", name):
                records, offset = self._client.scroll(
                    name,
                    scroll_filter=qfilter,
                    limit=batch,
                    offset=offset,
                    with_payload=True,
                    with_vectors=[DENSE] if with_vectors else False,
                )
            for record in records:
                yield self._scored(record, 1.0)
            if offset is None:
                return

    def count(self, tenant_id: str, layer: Layer, flt: PointFilter | None = None) -> int:
        """Exact number of points matching ``flt``."""
        name = self._ensure(tenant_id, layer, create=False)
        if name is None or matches_nothing(flt):
            return 0
        with _translated("count", name):
            result = self._client.count(
                name, count_filter=self._filter(check_tenant(tenant_id), flt), exact=True
            )
        return int(result.count)

    def close(self) -> None:
        """Close the client's connections (a pinned view leaves the shared client open)."""
        if self._pinned is not None:
            return
        with _translated("close", self._prefix + "*"):
            self._client.close()
