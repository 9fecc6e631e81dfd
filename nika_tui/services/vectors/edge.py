"""Qdrant Edge adapter: the real Qdrant engine in-process, one shard per tenant and layer.

Layout: ``{root}/{tenant_id}/{layer}`` is one ``EdgeShard`` (its WAL, segments and
``edge_config.json``). Shards open lazily and stay open until :meth:`EdgeVectorStore.close`:
Qdrant Edge locks a shard's WAL, so a second process cannot open it (the memory service is the
single writer). Tenant isolation is structural (another directory) and each query also filters
on ``tenant_id``.

Missing shards: creating a shard also writes a marker ``{root}/.shards/{tenant_id}.{layer}``
(0600). A shard whose marker exists but whose directory (or ``edge_config.json``) is gone raises
:class:`~nika_tui.errors.ShardMissing` — it is never re-created empty, so a deleted shard is an
alarm, not a silent "no memory". The check is one ``stat`` per call on an open shard too.

Durability: every update is appended to the shard's WAL before ``update`` returns (it survives
the process being killed), and :meth:`upsert`, :meth:`set_payload` and :meth:`delete` then call
``flush()`` so segments are on disk too before they return (survives an OS crash). Callers batch
points to amortise the flush (a few milliseconds).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from nika_tui.domain.memory import Layer
from nika_tui.domain.ports import PointFilter, ScoredPoint, VectorPoint
from nika_tui.errors import PointNotFound, ShardBusy, ShardMissing, StoreUnavailable
from nika_tui.paths import FILE_MODE, ensure_private_dir
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

_CONFIG_FILE = "edge_config.json"
MARKERS_DIR = ".shards"
"""Under the root: one marker file per shard ever created (see the module docstring)."""
GENERATION_FILE = "GENERATION"
"""Per-tenant pointer to the live generation of its shards (strategy A's fresh start).

Absent: the shards are ``{root}/{tenant}/{layer}`` (every store before a reset). Present: it
names a directory ``{root}/{tenant}/gens/{name}`` holding ``{tenant}/{layer}`` shards (built by
an :class:`EdgeVectorStore` rooted there). It is written last and atomically (temp file, fsync,
rename), so a process killed at any moment leaves the old generation or the new one live.
"""
GENERATIONS_DIR = "gens"

SHARD_CONSTANT_KEYS: tuple[str, ...] = ("tenant_id", "layer")
"""Keys with one value per Edge shard (a shard is one tenant's layer): never indexed here."""

EDGE_INDEXED_KEYS: tuple[str, ...] = tuple(k for k in INDEXED_KEYS if k not in SHARD_CONSTANT_KEYS)
"""The keyword indexes of an Edge shard. An index costs on every upsert and flush (~0.4 ms and
~1.5 ms of CPU per batch of 128, about 3 ms of flush wall time, measured); the two keys that
are constant within a shard would never narrow a query, and no filter names them (the shard
already is the tenant's layer)."""

_PACKED_KEYS: tuple[str, ...] = ("meta",)
"""Payload keys whose nested object is stored as one JSON string, and decoded on read.

Edge converts a Python payload value by value, at ~5 µs per string, both ways: the NIKA_META
envelope alone (~15 strings) was ~85 µs of a point's ~165 µs upsert conversion and as much
per returned hit. No filter reads inside it (every filtered key is top-level,
``INDEXED_KEYS``), so one string loses nothing. A point written before (a dict) reads back
unchanged.
"""


def _pack(payload: Mapping[str, Any]) -> dict[str, Any]:
    packed = dict(payload)
    for key in _PACKED_KEYS:
        value = packed.get(key)
        if isinstance(value, dict | list):
            packed[key] = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return packed


def _unpack(payload: dict[str, Any]) -> dict[str, Any]:
    for key in _PACKED_KEYS:
        value = payload.get(key)
        if isinstance(value, str) and value[:1] in ("{", "["):
            # A plain string that happens to start with a brace is left as written.
            with contextlib.suppress(ValueError):
                payload[key] = json.loads(value)
    return payload


@contextmanager
def _translated(action: str, where: str) -> Iterator[None]:
    """Turn qdrant_edge's errors into :class:`StoreUnavailable`.

    qdrant_edge raises plain ``Exception`` for everything (I/O, locks, bad input), so the
    blind catch is the only way to translate it; it stays confined to this helper.
    """
    try:
        yield
    except StoreUnavailable:
        raise
    except Exception as exc:  # qdrant_edge raises bare Exception; re-raised as ours
        text = str(exc)
        if "WouldBlock" in text or "failed to open WAL" in text:
            hint = (
                "another process has this store open; only the memory service opens it — "
                "reach memory through the service, or stop the other process (`nika down`)"
            )
        else:
            hint = f"check disk space and permissions under {where}, then run `nika doctor`"
        raise StoreUnavailable(f"qdrant edge {action} failed at {where}: {text}", hint) from exc


class EdgeVectorStore:
    """:class:`~nika_tui.domain.ports.VectorStore` on Qdrant Edge shards under ``root``."""

    def __init__(
        self,
        root: Path,
        dimension: int,
        *,
        flush_writes: bool = True,
        search_threads: int | None = 1,
    ) -> None:
        """Args:
        root: directory holding one sub-directory per tenant (created 0700).
        dimension: size of the dense vectors (384 for all-MiniLM-L6-v2).
        flush_writes: flush segments after every write call (default). Only bulk loaders
            that call :meth:`flush` themselves should turn it off; the WAL still protects
            against a killed process either way.
        search_threads: search threads per shard (Qdrant's default is one pool per shard sized
            by the CPU count: 8 threads per shard here, hundreds with many tenants; one is
            enough for shards of this size). ``None`` keeps Qdrant's default.
        """
        if dimension < 1:
            raise ValueError("dimension must be positive")
        self._root = root
        self._dimension = dimension
        self._flush_writes = flush_writes
        self._search_threads = search_threads
        self._shards: dict[tuple[str, Layer], Any] = {}
        self._wheres: dict[tuple[str, Layer], str] = {}
        self._offline: set[tuple[str, Layer]] = set()
        self._lock = threading.Lock()
        self._encoder = SparseEncoder()

    @property
    def root(self) -> Path:
        """The directory holding the tenants' shards."""
        return self._root

    @property
    def dimension(self) -> int:
        """Size of the dense vectors."""
        return self._dimension

    def _path(self, tenant_id: str, layer: Layer) -> Path:
        gen = self.generation(tenant_id)
        if gen is None:
            return self._root / tenant_id / layer.value
        return self.generation_root(tenant_id, gen) / tenant_id / layer.value

    def generation(self, tenant_id: str) -> str | None:
        """The live generation of a tenant's shards (None: the original layout)."""
        pointer = self._root / tenant_id / GENERATION_FILE
        try:
            raw = json.loads(pointer.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise StoreUnavailable(
                f"unreadable generation pointer {pointer}: {exc}",
                "restore it from the last snapshot's manifest (`generation`) or remove it to "
                "go back to the original store",
            ) from exc
        name = raw.get("generation") if isinstance(raw, dict) else None
        if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
            raise StoreUnavailable(f"bad generation pointer {pointer}", "remove or fix it")
        return name

    def generation_root(self, tenant_id: str, name: str) -> Path:
        """Root of generation ``name``: an ``EdgeVectorStore`` there builds its shards."""
        return self._root / check_tenant(tenant_id) / GENERATIONS_DIR / name

    def switch_generation(self, tenant_id: str, name: str, record: Mapping[str, Any]) -> None:
        """Make generation ``name`` the tenant's live shards (the atomic step of a reset).

        The tenant's open shards are flushed and closed first; the pointer file is then
        replaced atomically. Every later call opens the new generation's shards.

        Args:
            tenant_id: The tenant.
            name: A generation built under :meth:`generation_root`.
            record: Extra JSON fields kept in the pointer (previous generation, snapshot...).

        Raises:
            StoreUnavailable: the generation has no shard, or a close or the write failed.
        """
        from nika_tui.services.files import atomic_write_text

        tenant_id = check_tenant(tenant_id)
        target = self.generation_root(tenant_id, name) / tenant_id
        if not any((target / layer.value / _CONFIG_FILE).exists() for layer in Layer):
            raise StoreUnavailable(
                f"generation {name} of tenant {tenant_id} has no shard",
                "rebuild it (run the reset again); the live store is unchanged",
            )
        with self._lock:
            keys = [k for k in self._shards if k[0] == tenant_id]
            shards = [(k, self._shards.pop(k)) for k in keys]
            for k in [k for k in self._wheres if k[0] == tenant_id]:
                del self._wheres[k]
        for (_, layer), shard in shards:
            with _translated("close", self._where(tenant_id, layer)):
                shard.flush()
                shard.close()
        body = {**record, "generation": name}
        with _translated("switch", str(self._root / tenant_id)):
            atomic_write_text(self._root / tenant_id / GENERATION_FILE, json.dumps(body) + "\n")
        with self._lock:
            for k in [k for k in self._wheres if k[0] == tenant_id]:
                del self._wheres[k]

    def _where(self, tenant_id: str, layer: Layer) -> str:
        """The shard's path as text, for error messages; cached (pathlib costs ~10 µs a call,
        and every search, retrieve and write names its shard)."""
        key = (tenant_id, layer)
        where = self._wheres.get(key)
        if where is None:
            where = self._wheres[key] = str(self._path(tenant_id, layer))
        return where

    def marker(self, tenant_id: str, layer: Layer) -> Path:
        """The marker that says this shard was created (and so must not vanish)."""
        return self._root / MARKERS_DIR / f"{tenant_id}.{layer.value}"

    def _mark(self, tenant_id: str, layer: Layer) -> None:
        marker = self.marker(tenant_id, layer)
        if not marker.exists():
            ensure_private_dir(marker.parent)
            fd = os.open(marker, os.O_WRONLY | os.O_CREAT, FILE_MODE)
            os.close(fd)

    def _missing(self, tenant_id: str, layer: Layer) -> ShardMissing:
        path = self._path(tenant_id, layer)
        return ShardMissing(
            f"the {layer.value} memory of tenant {tenant_id} is missing at {path} "
            "(it held memories before)",
            f"restore that directory from a backup or `nika snapshot import --tenant {tenant_id}`;"
            f" to start this tenant afresh instead, delete {self.marker(tenant_id, layer)}",
        )

    def _config(self) -> Any:
        from qdrant_edge import (
            Distance,
            EdgeConfig,
            EdgeSparseVectorParams,
            EdgeVectorParams,
            Memory,
            Modifier,
        )

        return EdgeConfig(
            vectors={DENSE: EdgeVectorParams(size=self._dimension, distance=Distance.Cosine)},
            sparse_vectors={SPARSE: EdgeSparseVectorParams(modifier=Modifier.Idf)},
            # Optimised segments keep their payloads mapped *and populated* (Edge's default is
            # "cold": read on first touch). Every recall returns its hits' payloads; cold, that
            # was +1.4 ms on the first queries of a shard after a restart or optimisation
            # (p95 2.35 -> 1.1 ms on one 18.6k-point shard). The pages are file-backed
            # page cache, so the kernel can still reclaim them under memory pressure.
            payload_memory=Memory.Cached,
            max_search_threads=self._search_threads,
        )

    def _shard(self, tenant_id: str, layer: Layer | str, *, create: bool) -> Any:
        """The open shard of ``tenant_id``/``layer``; ``None`` if absent and not ``create``."""
        tenant_id = check_tenant(tenant_id)
        layer = check_layer(layer)
        key = (tenant_id, layer)
        with self._lock:
            if key in self._offline:
                raise ShardBusy(
                    f"the {layer.value} memory of tenant {tenant_id} is being optimised",
                    "retry in a few seconds",
                )
            shard = self._shards.get(key)
            if shard is not None:
                # Deleted under an open shard: writes would go to unlinked files and be lost.
                if not os.path.exists(self._where(tenant_id, layer) + "/" + _CONFIG_FILE):
                    self._shards.pop(key, None)
                    raise self._missing(tenant_id, layer)
                return shard
            path = self._path(tenant_id, layer)
            exists = (path / _CONFIG_FILE).exists()
            if not exists and self.marker(tenant_id, layer).exists():
                raise self._missing(tenant_id, layer)
            if not exists and not create:
                return None
            from qdrant_edge import EdgeShard, PayloadSchemaType, UpdateOperation

            with _translated("open", str(path)):
                if exists:
                    # Passing the config makes Qdrant check it against the stored one, so a
                    # store created with another dimension fails here, not on the first write.
                    shard = EdgeShard.load(str(path), self._config())
                else:
                    ensure_private_dir(path.parent)
                    shard = EdgeShard.create(str(path), self._config())
                    path.chmod(0o700)
                self._mark(tenant_id, layer)
                present = set(shard.info().payload_schema)
                for field in EDGE_INDEXED_KEYS:
                    if field not in present:
                        shard.update(
                            UpdateOperation.create_field_index(field, PayloadSchemaType.Keyword)
                        )
                for field in present & set(SHARD_CONSTANT_KEYS):
                    # Written by earlier versions: every point of the shard has one value.
                    shard.update(UpdateOperation.delete_field_index(field))
            self._shards[key] = shard
            return shard

    def _filter(self, tenant_id: str, flt: PointFilter | None) -> Any:
        """The Qdrant filter of ``flt`` inside this tenant's shard (None: every point)."""
        from qdrant_edge import FieldCondition, Filter, HasIdCondition, MatchAny, MatchValue

        # No tenant_id condition: the shard itself is the tenant's (structural isolation, and
        # every write is checked to carry this tenant). A condition matching every point of the
        # shard only made Qdrant's planner slower: ~2x CPU per filtered query, measured.
        must: list[Any] = []
        if flt is not None:
            for key, value in flt.equals.items():
                must.append(FieldCondition(key=key, match=MatchValue(value)))
            for key, values in flt.any_of.items():
                must.append(FieldCondition(key=key, match=MatchAny(list(values))))
            if flt.exclude_ids:
                skip = HasIdCondition({uuid.UUID(check_point_id(i)) for i in flt.exclude_ids})
                return Filter(must=must or None, must_not=[skip])
        return Filter(must=must) if must else None

    def _after_write(self, shard: Any, where: str) -> None:
        if self._flush_writes:
            with _translated("flush", where):
                shard.flush()

    @staticmethod
    def _scored(point: Any, score: float | None = None) -> ScoredPoint:
        vector = None
        if isinstance(point.vector, dict) and DENSE in point.vector:
            vector = list(point.vector[DENSE])
        return ScoredPoint(
            id=str(point.id),
            score=float(point.score) if score is None else score,
            payload=_unpack(dict(point.payload or {})),
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
        with _translated("upsert", where):
            shard.update(
                UpdateOperation.upsert_points(
                    [
                        Point(
                            p.id,
                            {
                                DENSE: p.vector,
                                SPARSE: SparseVector(p.sparse_indices, p.sparse_values),
                            },
                            _pack(p.payload),
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
        with _translated("search", self._where(tenant_id, check_layer(layer))):
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
    ) -> list[ScoredPoint]:
        """Dense + BM25 prefetches fused with RRF in one Qdrant query; ``score`` is fused."""
        query = check_vector(vector, self._dimension, "query vector")
        check_limit(limit)
        shard = self._shard(tenant_id, layer, create=False)
        if shard is None or matches_nothing(flt):
            return []
        from qdrant_edge import Fusion, Prefetch, Query, QueryRequest, SparseVector

        qfilter = self._filter(tenant_id, flt)
        depth = prefetch_limit(limit)
        prefetches = [
            Prefetch(limit=depth, query=Query.Nearest(query, using=DENSE), filter=qfilter)
        ]
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
        with _translated("search", self._where(tenant_id, check_layer(layer))):
            return [self._scored(p) for p in shard.query(request)]

    def retrieve(
        self, tenant_id: str, layer: Layer, ids: Sequence[str], with_vectors: bool = False
    ) -> list[ScoredPoint]:
        """Points by id in the order asked (missing ids skipped); ``score`` is 1.0."""
        wanted = list(dict.fromkeys(check_point_id(i) for i in ids))
        shard = self._shard(tenant_id, layer, create=False)
        if shard is None or not wanted:
            return []
        with _translated("retrieve", self._where(tenant_id, check_layer(layer))):
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
        with _translated("set_payload", where):
            shard.update(UpdateOperation.set_payload([uuid.UUID(pid)], _pack(values)))
        self._after_write(shard, where)

    def delete(self, tenant_id: str, layer: Layer, ids: Sequence[str]) -> None:
        """Remove points from the live index (purge only, after archiving)."""
        wanted: list[Any] = [uuid.UUID(check_point_id(i)) for i in ids]
        shard = self._shard(tenant_id, layer, create=False)
        if shard is None or not wanted:
            return
        from qdrant_edge import UpdateOperation

        where = self._where(tenant_id, check_layer(layer))
        with _translated("delete", where):
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
            with _translated("scroll", where):
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

        with _translated("count", self._where(tenant_id, check_layer(layer))):
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
            and any((self._path(p.name, layer) / _CONFIG_FILE).exists() for layer in Layer)
        )

    def flush(self) -> None:
        """Flush every open shard (for loaders that set ``flush_writes=False``)."""
        with self._lock:
            shards = list(self._shards.items())
        for (tenant_id, layer), shard in shards:
            with _translated("flush", self._where(tenant_id, layer)):
                shard.flush()

    def flush_tenant(self, tenant_id: str) -> None:
        """Flush the open shards of one tenant, checking they are still on disk.

        Raises:
            ShardMissing: a shard's directory vanished under it (nothing it holds is durable).
            StoreUnavailable: the flush failed.
        """
        with self._lock:
            keys = [key for key in self._shards if key[0] == tenant_id]
        for _, layer in keys:
            shard = self._shard(tenant_id, layer, create=False)
            if shard is not None:
                with _translated("flush", self._where(tenant_id, layer)):
                    shard.flush()

    def optimize(self, tenant_id: str, layer: Layer) -> bool:
        """Merge segments and build the HNSW index of one shard (blocking; run it when idle).

        Qdrant Edge runs no background optimizer: without this, new points stay in appendable
        segments that are searched exhaustively (fast with payload-index filters, slower
        unfiltered on large shards).

        Returns:
            True if anything was optimised.
        """
        shard = self._shard(tenant_id, layer, create=False)
        if shard is None:
            return False
        with _translated("optimize", self._where(tenant_id, check_layer(layer))):
            return bool(shard.optimize())

    # --- index maintenance (see docs/storage.md, "Index maintenance") -----------------------
    def is_open(self, tenant_id: str, layer: Layer) -> bool:
        """True when this process holds the shard open (opening one costs a segment load)."""
        with self._lock:
            return (check_tenant(tenant_id), check_layer(layer)) in self._shards

    def pending_index(self, tenant_id: str, layer: Layer) -> int:
        """How many points of the shard are not in an HNSW-indexed segment yet (0: no shard).

        Qdrant's ``indexed_vectors_count`` counts every vector that sits in an index: the sparse
        BM25 vectors always do (their inverted index is built on write), the dense vectors only
        once :meth:`optimize` moved them into an HNSW segment. With two vectors per point, an
        unoptimised shard reports ``indexed == points`` and a fully optimised one
        ``indexed == 2 * points`` (measured on qdrant-edge 0.9.0: 8,000 points → 8,000 → 16,000;
        10 more points → 16,010), so ``2 * points - indexed`` is the number of dense vectors
        still searched exhaustively. Deleted points can stay counted as indexed until a merge
        vacuums them (100 of 8,000 deleted: indexed stays 16,000), which makes this an
        underestimate (clamped at 0), never an overestimate.
        """
        shard = self._shard(tenant_id, layer, create=False)
        if shard is None:
            return 0
        with _translated("info", self._where(tenant_id, check_layer(layer))):
            info = shard.info()
        return max(0, 2 * int(info.points_count) - int(info.indexed_vectors_count))

    def is_offline(self, tenant_id: str, layer: Layer) -> bool:
        """True between :meth:`take_offline` and :meth:`bring_online` for this shard."""
        with self._lock:
            return (check_tenant(tenant_id), check_layer(layer)) in self._offline

    def take_offline(self, tenant_id: str, layer: Layer) -> Path | None:
        """Flush and close one shard so another process may open it (its WAL lock is freed).

        Until :meth:`bring_online`, every call touching this shard raises
        :class:`StoreUnavailable` ("being optimised — retry in a few seconds"); other shards
        are unaffected.

        Returns:
            The shard's directory, or None if it does not exist (nothing is marked offline).
        """
        tenant_id = check_tenant(tenant_id)
        layer = check_layer(layer)
        key = (tenant_id, layer)
        path = self._path(tenant_id, layer)
        with self._lock:
            if not (path / _CONFIG_FILE).exists():
                return None
            # Marked under the lock that _shard takes: no call can reopen it after this point.
            self._offline.add(key)
            shard = self._shards.pop(key, None)
        if shard is not None:
            try:
                with _translated("close", str(path)):
                    shard.flush()
                    shard.close()
            except StoreUnavailable:
                with self._lock:
                    self._offline.discard(key)
                raise
        return path

    def bring_online(self, tenant_id: str, layer: Layer) -> None:
        """Clear the offline mark; the shard reopens lazily on its next use."""
        with self._lock:
            self._offline.discard((check_tenant(tenant_id), check_layer(layer)))

    def optimize_offline(self, tenant_id: str, layer: Layer, timeout_s: float = 600) -> bool:
        """Optimise one shard in a child process (blocking; for benchmarks and the CLI).

        The shard is taken offline, ``python -m nika_tui.services.vectors.optimize_shard``
        optimises it (Qdrant's optimize holds the GIL for seconds, so it never runs in a
        process that serves anything), and the shard is brought online again in every case.
        A killed or failed child leaves the shard as it was: Qdrant builds the new segment
        aside and swaps it in only when complete.

        Returns:
            True if anything was optimised (False also when the shard does not exist).

        Raises:
            StoreUnavailable: the child failed or ran past ``timeout_s`` (with its stderr).
        """
        from nika_tui.services.vectors.optimize_shard import ShardOptimizer

        if self.take_offline(tenant_id, layer) is None:
            return False
        try:
            child = ShardOptimizer.start(self._root, tenant_id, layer, self._dimension)
            return child.wait(timeout_s).optimized
        finally:
            self.bring_online(tenant_id, layer)

    def close(self) -> None:
        """Flush and close every open shard; the store reopens them lazily if used again."""
        with self._lock:
            shards = list(self._shards.items())
            self._shards.clear()
        for (tenant_id, layer), shard in shards:
            with _translated("close", self._where(tenant_id, layer)):
                shard.flush()
                shard.close()
