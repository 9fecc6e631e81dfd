"""The snapshot format: a directory of JSONL + raw float32 vectors + a checksummed manifest.

Layout of ``PATH`` (directory 0700, files 0600; see ``docs/snapshot.md``)::

    manifest.json          written last: its presence means the snapshot is complete
    semantic.jsonl         one point per line: {"id", "payload"} (payload = NIKA record + meta)
    semantic.f32           the dense vectors, little-endian float32, row i = line i, dims in
                           the manifest
    episodic.jsonl / episodic.f32
    hierarchy.yaml         the tenant's hierarchy file, byte for byte ("" when it has none)
    review_queue.jsonl     every review item (pending and resolved), one JSON object a line
    recall_settings.json   the tenant's recall settings: the tuner's adopted parameters
                           (``recall_params``) and the debt actions' (``recall_tuning``), each
                           the Redis hash's fields as stored (absent from older snapshots)

The manifest holds ``format`` (``nika-snapshot``), ``schema_version``, the tenant, the time, the
embedder's name and dimension, counts per layer and status, and the SHA-256 and size of every
other file. Nothing here touches a store: :mod:`.export` and :mod:`.restore` do.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nika_tui.domain.memory import Layer
from nika_tui.errors import SnapshotInvalid

FORMAT = "nika-snapshot"
SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
HIERARCHY = "hierarchy.yaml"
REVIEW_QUEUE = "review_queue.jsonl"
RECALL_SETTINGS = "recall_settings.json"
VECTOR_DTYPE = "<f4"
"""Little-endian IEEE-754 float32, row-major: ``numpy.fromfile(path, '<f4').reshape(n, dims)``."""
_CHUNK = 1 << 20


def points_file(layer: Layer) -> str:
    """``{layer}.jsonl``."""
    return f"{layer.value}.jsonl"


def vectors_file(layer: Layer) -> str:
    """``{layer}.f32``."""
    return f"{layer.value}.f32"


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class Manifest:
    """The parsed ``manifest.json``."""

    tenant_id: str
    created_at: str
    embedder: str
    dimension: int
    counts: Mapping[str, Mapping[str, int]]
    files: Mapping[str, Mapping[str, Any]]
    extra: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (keys sorted when written)."""
        return {
            "format": FORMAT,
            "schema_version": SCHEMA_VERSION,
            "tenant_id": self.tenant_id,
            "created_at": self.created_at,
            "embedder": {"name": self.embedder, "dimension": self.dimension},
            "vectors": {"dtype": VECTOR_DTYPE, "dimension": self.dimension},
            "counts": {k: dict(v) for k, v in self.counts.items()},
            "files": {k: dict(v) for k, v in self.files.items()},
            **dict(self.extra),
        }

    def total(self) -> int:
        """Points in the snapshot (both layers, both statuses)."""
        return sum(sum(v.values()) for v in self.counts.values())


def read_manifest(root: Path) -> Manifest:
    """Parse and check ``root/manifest.json`` (not the checksums: see :func:`verify`).

    Raises:
        SnapshotInvalid: missing, unreadable, of another format or schema version.
    """
    path = root / MANIFEST
    fix = "export it again with `nika snapshot export`"
    if not path.is_file():
        raise SnapshotInvalid(f"{root} is not a complete snapshot (no {MANIFEST})", fix)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise ValueError(f"format is not {FORMAT!r}")
        if raw.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(
                f"schema_version {raw.get('schema_version')!r}, this nika reads {SCHEMA_VERSION}"
            )
        known = {"format", "schema_version", "tenant_id", "created_at", "embedder", "vectors"}
        known |= {"counts", "files"}
        return Manifest(
            tenant_id=str(raw["tenant_id"]),
            created_at=str(raw["created_at"]),
            embedder=str(raw["embedder"]["name"]),
            dimension=int(raw["embedder"]["dimension"]),
            counts={
                str(k): {str(s): int(n) for s, n in v.items()} for k, v in raw["counts"].items()
            },
            files={str(k): dict(v) for k, v in raw["files"].items()},
            extra={k: v for k, v in raw.items() if k not in known},
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SnapshotInvalid(f"{path}: bad manifest ({exc})", fix) from exc


def verify(root: Path, manifest: Manifest) -> None:
    """Check every file's size and SHA-256 against the manifest.

    Raises:
        SnapshotInvalid: a file is missing, has another size, or another checksum.
    """
    for name, info in sorted(manifest.files.items()):
        path = root / name
        if "/" in name or name.startswith(".") or not path.is_file():
            raise SnapshotInvalid(
                f"snapshot {root}: {name} is missing", "copy the whole snapshot directory"
            )
        if path.stat().st_size != int(info.get("bytes", -1)) or sha256_of(path) != info.get(
            "sha256"
        ):
            raise SnapshotInvalid(
                f"snapshot {root}: bad checksum for {name} (the file changed or is damaged)",
                "use an intact copy of the snapshot, or export it again; nothing was imported",
            )
