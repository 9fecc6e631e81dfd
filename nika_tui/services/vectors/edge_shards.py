"""Qdrant Edge shards: where each lives, opening them lazily, generations, markers, closing.

The data operations are :class:`~nika_tui.services.vectors.edge.EdgeVectorStore` (a subclass)
and the index maintenance :class:`~nika_tui.services.vectors.edge_maintenance.EdgeMaintenance`.

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

import json
import os
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nika_tui.domain.memory import Layer
from nika_tui.domain.ports import PointFilter
from nika_tui.errors import ShardBusy, ShardMissing, StoreUnavailable
from nika_tui.paths import FILE_MODE, ensure_private_dir
from nika_tui.services.vectors.common import (
    DENSE,
    SPARSE,
    SparseEncoder,
    check_layer,
    check_point_id,
    check_tenant,
)
from nika_tui.services.vectors.edge_codec import (
    CONFIG_FILE,
    EDGE_INDEXED_KEYS,
    GENERATION_FILE,
    GENERATIONS_DIR,
    MARKERS_DIR,
    SHARD_CONSTANT_KEYS,
    translated,
)

ABSENT_RECHECK_S = 1.0
"""How long a read trusts that a layer is absent before it looks again (three syscalls: the
generation pointer, the shard's config, its marker). A layer this process creates is seen at
once (creating clears it); only one created by another process can stay unseen this long."""


class EdgeShards:
    """The Qdrant Edge shards under ``root``, opened lazily (the store's lower half)."""

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
        self._absent: dict[tuple[str, Layer], float] = {}
        """Layers found absent by a read, and when (monotonic): see :data:`ABSENT_RECHECK_S`."""
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
        if not any((target / layer.value / CONFIG_FILE).exists() for layer in Layer):
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
            with translated("close", self._where(tenant_id, layer)):
                shard.flush()
                shard.close()
        body = {**record, "generation": name}
        with translated("switch", str(self._root / tenant_id)):
            atomic_write_text(self._root / tenant_id / GENERATION_FILE, json.dumps(body) + "\n")
        with self._lock:
            for k in [k for k in self._absent if k[0] == tenant_id]:
                del self._absent[k]  # the new generation may have a layer the old one had not
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
        # Lock-free first: every recall names two shards, and eight readers queued on this lock
        # behind each other's stat / open syscalls (a thread that drops the GIL for a syscall
        # while holding the lock makes every other reader wait for it to get the GIL back).
        # A dict read is atomic; what can change under it changes under the lock too, once
        # the lock is released, so a reader sees the same states as before.
        if key not in self._offline:
            shard = self._shards.get(key)
            if shard is not None:
                if os.path.exists(self._where(tenant_id, layer) + "/" + CONFIG_FILE):
                    return shard
            elif not create:
                seen = self._absent.get(key)
                if seen is not None and time.monotonic() - seen < ABSENT_RECHECK_S:
                    return None
                path = self._path(tenant_id, layer)
                if not (path / CONFIG_FILE).exists() and key not in self._shards:
                    if self.marker(tenant_id, layer).exists():
                        raise self._missing(tenant_id, layer)
                    self._absent[key] = time.monotonic()
                    return None
        with self._lock:
            self._absent.pop(key, None)  # created or opened now: the next read must see it
            if key in self._offline:
                raise ShardBusy(
                    f"the {layer.value} memory of tenant {tenant_id} is being optimised",
                    "retry in a few seconds",
                )
            shard = self._shards.get(key)
            if shard is not None:
                # Deleted under an open shard: writes would go to unlinked files and be lost.
                if not os.path.exists(self._where(tenant_id, layer) + "/" + CONFIG_FILE):
                    self._shards.pop(key, None)
                    raise self._missing(tenant_id, layer)
                return shard
            path = self._path(tenant_id, layer)
            exists = (path / CONFIG_FILE).exists()
            if not exists and self.marker(tenant_id, layer).exists():
                raise self._missing(tenant_id, layer)
            if not exists and not create:
                return None
            from qdrant_edge import EdgeShard, PayloadSchemaType, UpdateOperation

            with translated("open", str(path)):
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
            with translated("flush", where):
                shard.flush()

    def flush(self) -> None:
        """Flush every open shard (for loaders that set ``flush_writes=False``)."""
        with self._lock:
            shards = list(self._shards.items())
        for (tenant_id, layer), shard in shards:
            with translated("flush", self._where(tenant_id, layer)):
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
                with translated("flush", self._where(tenant_id, layer)):
                    shard.flush()

    def close(self) -> None:
        """Flush and close every open shard; the store reopens them lazily if used again."""
        with self._lock:
            shards = list(self._shards.items())
            self._shards.clear()
            self._absent.clear()
        for (tenant_id, layer), shard in shards:
            with translated("close", self._where(tenant_id, layer)):
                shard.flush()
                shard.close()
