"""``nika snapshot import`` and reading a snapshot back (points, history).

Import checks the whole snapshot (manifest, sizes, SHA-256 of every file, tenant, dimension)
before it writes anything, and refuses a tenant whose store already holds points unless told
(``force``): a bad snapshot or a wrong target leaves the store untouched.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from nika_tui.domain.memory import Layer
from nika_tui.domain.ports import VectorPoint, VectorStore
from nika_tui.engine.context import EngineContext
from nika_tui.engine.review_refs import PENDING, index_reviews
from nika_tui.engine.snapshot.format import (
    HIERARCHY,
    RECALL_SETTINGS,
    REVIEW_QUEUE,
    Manifest,
    points_file,
    read_manifest,
    vectors_file,
)
from nika_tui.errors import SnapshotInvalid, ValidationFailed
from nika_tui.paths import Roots
from nika_tui.services import redis_keys
from nika_tui.services.files import atomic_write_text

UPSERT_BATCH = 256
HISTORY_SNAPSHOTS = "history_snapshots"
"""Payload key: ids of the snapshots (``{data}/tenants/{t}/snapshots/{id}``) that hold older
versions of this memory, set by a fresh start (:mod:`nika_tui.engine.reset`)."""


def snapshot_dir(where: Roots, tenant_id: str, snapshot_id: str) -> Path:
    """Where a reset keeps snapshot ``snapshot_id`` of ``tenant_id``."""
    return where.tenant_data_dir(tenant_id) / "snapshots" / snapshot_id


def superseded_ids(root: Path) -> set[str]:
    """Ids some memory of the snapshot was superseded by: those with older versions there."""
    out: set[str] = set()
    for layer in Layer:
        with (root / points_file(layer)).open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    nxt = json.loads(line)["payload"].get("superseded_by")
                    if nxt:
                        out.add(str(nxt))
    return out


def open_snapshot(root: Path, tenant_id: str | None = None) -> Manifest:
    """The verified manifest of ``root`` (checksums included).

    Raises:
        SnapshotInvalid: incomplete, another format, a bad checksum, or another tenant's.
    """
    from nika_tui.engine.snapshot.format import verify

    manifest = read_manifest(root)
    verify(root, manifest)
    if tenant_id is not None and manifest.tenant_id != tenant_id:
        raise SnapshotInvalid(
            f"snapshot {root} belongs to tenant {manifest.tenant_id!r}, not {tenant_id!r}",
            f"import it with --tenant {manifest.tenant_id}",
        )
    return manifest


def iter_points(
    root: Path, manifest: Manifest, layer: Layer
) -> Iterator[tuple[str, dict[str, Any], np.ndarray]]:
    """``(id, payload, vector)`` of every point of one layer, in file order."""
    vectors = np.fromfile(root / vectors_file(layer), dtype="<f4")
    dims = manifest.dimension
    if vectors.size % dims:
        raise SnapshotInvalid(
            f"{vectors_file(layer)} is not a whole number of {dims}-d vectors",
            "export the snapshot again",
        )
    matrix = vectors.reshape(-1, dims)
    with (root / points_file(layer)).open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if i >= len(matrix):
                raise SnapshotInvalid(
                    f"{points_file(layer)} has more lines than vectors", "export it again"
                )
            row = json.loads(line)
            yield str(row["id"]), dict(row["payload"]), matrix[i]


def store_is_empty(vectors: VectorStore, tenant_id: str) -> bool:
    """True when neither layer of the tenant holds a point."""
    return all(vectors.count(tenant_id, layer) == 0 for layer in Layer)


def load_points(vectors: VectorStore, root: Path, manifest: Manifest, tenant_id: str) -> int:
    """Upsert every point of the snapshot into ``vectors`` (ids, payloads, vectors as stored)."""
    loaded = 0
    for layer in Layer:
        batch: list[VectorPoint] = []
        for point_id, payload, vector in iter_points(root, manifest, layer):
            batch.append(VectorPoint(point_id, vector.tolist(), str(payload["text"]), payload))
            if len(batch) >= UPSERT_BATCH:
                vectors.upsert(tenant_id, layer, batch)
                loaded += len(batch)
                batch = []
        if batch:
            vectors.upsert(tenant_id, layer, batch)
            loaded += len(batch)
    flush = getattr(vectors, "flush", None)
    if callable(flush):
        flush()
    return loaded


def import_snapshot(
    ctx: EngineContext, tenant_id: str, root: Path, *, force: bool = False
) -> dict[str, Any]:
    """Load a snapshot into the tenant's store, hierarchy and review queue.

    Args:
        ctx: Engine context.
        tenant_id: The tenant (must be the snapshot's).
        root: The snapshot directory.
        force: Write into a store that already holds points (same ids are overwritten), and
            replace an existing hierarchy and recall settings.

    Returns:
        ``{"points", "reviews", "hierarchy", "recall_settings", "path"}`` (hierarchy and recall
        settings: ``restored``, ``kept`` or ``empty``; recall settings also ``absent``).

    Raises:
        SnapshotInvalid: the snapshot fails a check (nothing was written).
        ValidationFailed: the store is not empty and ``force`` is off, or the dimension differs.
    """
    ctx.tenant(tenant_id)
    manifest = open_snapshot(root, tenant_id)
    if manifest.dimension != ctx.embedder.dimension:
        raise ValidationFailed(
            f"the snapshot holds {manifest.dimension}-d vectors ({manifest.embedder}), the store "
            f"is {ctx.embedder.dimension}-d",
            "import with the embedder that made the snapshot",
        )
    if not force and not store_is_empty(ctx.vectors, tenant_id):
        raise ValidationFailed(
            f"tenant {tenant_id} already holds memories: import refused",
            "import into an empty store, or pass --force to merge (same ids are overwritten)",
        )
    loaded = load_points(ctx.vectors, root, manifest, tenant_id)
    reviews = restore_reviews(ctx, tenant_id, root)
    hierarchy = restore_hierarchy(ctx, tenant_id, root, force=force)
    settings = restore_recall_settings(ctx, tenant_id, root, force=force)
    return {"points": loaded, "reviews": reviews, "hierarchy": hierarchy,
            "recall_settings": settings, "path": str(root)}  # fmt: skip


def restore_reviews(ctx: EngineContext, tenant_id: str, root: Path) -> int:
    """Put the snapshot's review items back (an item's id is its pair: same id, same item)."""
    key = redis_keys.review_queue(tenant_id)
    items: dict[str, str] = {}
    pending: list[tuple[str, str, str]] = []
    for line in (root / REVIEW_QUEUE).read_text(encoding="utf-8").splitlines():
        if line.strip():
            item = json.loads(line)
            items[str(item["id"])] = line
            if item.get("status") == PENDING:
                pending.append((str(item["id"]), str(item["old_id"]), str(item["new_id"])))
    if items:
        pipe = ctx.redis.pipeline(transaction=False)
        pipe.hset(key, mapping=items)  # type: ignore[arg-type]
        index_reviews(pipe, tenant_id, pending)
        pipe.execute()
    return len(items)


def restore_hierarchy(ctx: EngineContext, tenant_id: str, root: Path, *, force: bool) -> str:
    """Write the snapshot's hierarchy when the tenant has none (or ``force``)."""
    text = (root / HIERARCHY).read_text(encoding="utf-8")
    if not text.strip():
        return "empty"
    target = ctx.hierarchy(tenant_id).path
    if target.is_file() and target.read_text(encoding="utf-8").strip() and not force:
        return "kept"
    atomic_write_text(target, text)
    return "restored"


def restore_recall_settings(ctx: EngineContext, tenant_id: str, root: Path, *, force: bool) -> str:
    """Put the snapshot's recall settings back when the tenant has none of its own (or ``force``).

    Returns:
        ``restored``, ``kept`` (the tenant has its own), ``empty`` (the snapshot's tenant had
        none) or ``absent`` (a snapshot written before they were part of it).
    """
    from nika_tui.engine.snapshot.export import recall_settings, recall_settings_keys

    path = root / RECALL_SETTINGS
    if not path.is_file():
        return "absent"
    saved = json.loads(path.read_text(encoding="utf-8"))
    if not any(saved.values()):
        return "empty"
    if not force and any(recall_settings(ctx, tenant_id).values()):
        return "kept"
    pipe = ctx.redis.pipeline(transaction=True)
    for name, key in recall_settings_keys(tenant_id).items():
        pipe.delete(key)
        if saved.get(name):
            pipe.hset(key, mapping={str(k): str(v) for k, v in saved[name].items()})
    pipe.execute()
    return "restored"


def snapshot_history(root: Path, memory_id: str) -> list[dict[str, Any]]:
    """The supersede chain through ``memory_id`` as the snapshot holds it, oldest first.

    After a fresh start the retired memories live only in the snapshot; this is how their
    history stays reachable (``nika snapshot history PATH ID``).

    Raises:
        SnapshotInvalid: the snapshot fails its checks.
        ValidationFailed: no point has that id.
    """
    manifest = open_snapshot(root)
    payloads: dict[str, dict[str, Any]] = {}
    for layer in Layer:
        for point_id, payload, _ in iter_points(root, manifest, layer):
            payloads[point_id] = payload
    if memory_id not in payloads:
        raise ValidationFailed(
            f"no memory {memory_id} in snapshot {root}", "check the id (the JSONL lists them all)"
        )
    before = {str(p["superseded_by"]): i for i, p in payloads.items() if p.get("superseded_by")}
    first, seen = memory_id, {memory_id}
    while first in before and before[first] not in seen:
        first = before[first]
        seen.add(first)
    chain: list[dict[str, Any]] = []
    current: str | None = first
    while current is not None and current in payloads and len(chain) <= len(payloads):
        chain.append(payloads[current])
        nxt = payloads[current].get("superseded_by")
        current = str(nxt) if nxt and str(nxt) not in {c["id"] for c in chain} else None
    return chain
