"""``nika snapshot export``: every point of a tenant (both layers, both statuses) to a directory.

It runs where the stores are open: inside the memory service as the ``snapshot.export`` op (the
single writer; no ingest interleaves with the scroll), or in the CLI's own process when the
service is down. The files are written into a hidden sibling directory, fsynced, and renamed to
``PATH`` only once the manifest is in: a killed export leaves no half snapshot under ``PATH``.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from nika_tui.domain.memory import Layer, Status
from nika_tui.engine.context import EngineContext
from nika_tui.engine.snapshot.format import (
    HIERARCHY,
    MANIFEST,
    RECALL_SETTINGS,
    REVIEW_QUEUE,
    Manifest,
    points_file,
    sha256_of,
    vectors_file,
)
from nika_tui.errors import ValidationFailed
from nika_tui.paths import FILE_MODE, ensure_private_dir
from nika_tui.services import redis_keys
from nika_tui.services.recall_params import params_key

SCROLL_BATCH = 512


def _open_private(path: Path) -> BinaryIO:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    return os.fdopen(fd, "wb")


def _fsync_close(fh: BinaryIO) -> None:
    fh.flush()
    os.fsync(fh.fileno())
    fh.close()


def _points(ctx: EngineContext, tenant_id: str, layer: Layer) -> Iterator[Any]:
    return ctx.vectors.scroll(tenant_id, layer, None, batch=SCROLL_BATCH, with_vectors=True)


def _check_target(path: Path) -> None:
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise ValidationFailed(
            f"{path} already exists and is not an empty directory",
            "export to a new path (a snapshot is never overwritten)",
        )


def export_snapshot(
    ctx: EngineContext, tenant_id: str, path: Path, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Write the tenant's full snapshot to ``path`` (which must not exist, or be empty).

    Args:
        ctx: Engine context (its store, Redis, hierarchy and embedder name).
        tenant_id: The tenant.
        path: Target directory (absolute).
        extra: More manifest fields (e.g. the reset that took it).

    Returns:
        ``{"path", "counts", "points", "bytes"}``.

    Raises:
        ValidationFailed: ``path`` exists and is not an empty directory.
        StoreUnavailable: the store or Redis failed (nothing is left under ``path``).
    """
    ctx.tenant(tenant_id)
    _check_target(path)
    ensure_private_dir(path.parent)
    staging = path.parent / f".{path.name}.partial-{uuid.uuid4().hex[:8]}"
    ensure_private_dir(staging)
    try:
        manifest = _write_files(ctx, tenant_id, staging, extra or {})
        if path.exists():
            path.rmdir()  # empty, checked above
        os.replace(staging, path)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    size = sum(int(f["bytes"]) for f in manifest.files.values())
    return {
        "path": str(path),
        "counts": manifest.to_dict()["counts"],
        "points": manifest.total(),
        "bytes": size,
    }


def remove_partial_exports(parent: Path) -> list[str]:
    """Remove what killed exports left in ``parent`` (their hidden ``.NAME.partial-*``
    directories: never a snapshot, which only appears by rename once complete).

    Only for a directory one writer exports into (a reset's ``snapshots/``): another
    process's export in progress would look the same.

    Returns:
        The names removed.
    """
    removed: list[str] = []
    if parent.is_dir():
        for d in sorted(parent.glob(".*.partial-*")):
            if d.is_dir():
                shutil.rmtree(d)
                removed.append(d.name)
    return removed


def _write_files(ctx: EngineContext, tenant_id: str, root: Path, extra: dict[str, Any]) -> Manifest:
    dimension = ctx.embedder.dimension
    counts: dict[str, dict[str, int]] = {}
    for layer in Layer:
        per_status = {s.value: 0 for s in Status}
        lines = _open_private(root / points_file(layer))
        vecs = _open_private(root / vectors_file(layer))
        try:
            for p in _points(ctx, tenant_id, layer):
                vector = np.asarray(p.vector, dtype="<f4")
                if vector.shape != (dimension,):
                    raise ValidationFailed(
                        f"point {p.id} has a {vector.size}-d vector, the store is {dimension}-d",
                        "the store is inconsistent: run `nika doctor`",
                    )
                row = {"id": p.id, "payload": dict(p.payload)}
                lines.write(json.dumps(row, ensure_ascii=False, sort_keys=True).encode() + b"\n")
                vecs.write(vector.tobytes())
                status = str(p.payload.get("status", Status.CURRENT.value))
                per_status[status] = per_status.get(status, 0) + 1
        finally:
            _fsync_close(lines)
            _fsync_close(vecs)
        counts[layer.value] = per_status
    hierarchy = ctx.hierarchy(tenant_id).path
    with _open_private(root / HIERARCHY) as fh:
        if hierarchy.is_file():
            fh.write(hierarchy.read_bytes())
        fh.flush()
        os.fsync(fh.fileno())
    items: dict[str, str] = ctx.redis.hgetall(redis_keys.review_queue(tenant_id))  # type: ignore[assignment]
    with _open_private(root / REVIEW_QUEUE) as fh:
        for key in sorted(items):
            fh.write(items[key].encode("utf-8").replace(b"\n", b" ") + b"\n")
        fh.flush()
        os.fsync(fh.fileno())
    with _open_private(root / RECALL_SETTINGS) as fh:
        fh.write(json.dumps(recall_settings(ctx, tenant_id), sort_keys=True).encode() + b"\n")
        fh.flush()
        os.fsync(fh.fileno())
    files = {
        p.name: {"sha256": sha256_of(p), "bytes": p.stat().st_size} for p in sorted(root.iterdir())
    }
    manifest = Manifest(
        tenant_id=tenant_id,
        created_at=ctx.clock().isoformat(),
        embedder=embedder_name(ctx),
        dimension=dimension,
        counts=counts,
        files=files,
        extra={"store_generation": _generation(ctx, tenant_id), **extra},
    )
    with _open_private(root / MANIFEST) as fh:
        fh.write(json.dumps(manifest.to_dict(), indent=2, sort_keys=True).encode() + b"\n")
        fh.flush()
        os.fsync(fh.fileno())
    return manifest


def embedder_name(ctx: EngineContext) -> str:
    """The model that made the stored vectors (a CLI run outside the service embeds nothing)."""
    name = ctx.embedder.name
    if name == "stored-vectors-only":
        from nika_tui.services.embeddings import LOCAL_MODEL_NAME

        return ctx.settings.embeddings_model or LOCAL_MODEL_NAME
    return name


def _generation(ctx: EngineContext, tenant_id: str) -> str | None:
    from nika_tui.services.vectors.generations import generations_of

    gens = generations_of(ctx.vectors)
    return gens.live(tenant_id) if gens is not None else None


def recall_settings_keys(tenant_id: str) -> dict[str, str]:
    """The Redis hashes holding the tenant's recall settings, by their name in the snapshot."""
    return {"recall_params": params_key(tenant_id),
            "recall_tuning": redis_keys.recall_tuning(tenant_id)}  # fmt: skip


def recall_settings(ctx: EngineContext, tenant_id: str) -> dict[str, dict[str, str]]:
    """The tenant's tuned recall settings: each hash's fields as stored (``{}``: none)."""
    pipe = ctx.redis.pipeline(transaction=True)
    keys = recall_settings_keys(tenant_id)
    for key in keys.values():
        pipe.hgetall(key)
    return dict(zip(keys, pipe.execute(), strict=True))
