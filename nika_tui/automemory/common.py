"""What both targets share: the memories to export, imports through ingest, manifests on disk."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from nika_tui.domain.automemory import KIND_TAG_PREFIX, Manifest, MemoryKind, classify
from nika_tui.domain.envelope import NikaMeta, Trigger
from nika_tui.domain.memory import Layer, MemoryRecord, Status
from nika_tui.domain.ports import PointFilter
from nika_tui.domain.requests import RememberRequest
from nika_tui.engine.context import EngineContext
from nika_tui.engine.ingest import ingest_batch
from nika_tui.errors import NikaError
from nika_tui.paths import Roots, ensure_private_dir
from nika_tui.services.files import atomic_write_text


@dataclass
class SyncReport:
    """What one sync did in one directory (the ``--json`` output, per target)."""

    target: str
    path: str
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    imported: list[str] = field(default_factory=list)
    """Memory ids created from files (or index lines) nika had not written."""
    kept_edits: list[str] = field(default_factory=list)
    """Files changed since nika wrote them: imported and left exactly as they are."""
    superseded: list[str] = field(default_factory=list)
    """Memory ids the imports retired (supersede applied)."""
    retired: list[str] = field(default_factory=list)
    """Memories of deleted files, retired (``review:{id}`` when waiting for a person)."""
    not_indexed: int = 0

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict."""
        return dict(self.__dict__)


@dataclass(frozen=True, slots=True)
class Exportable:
    """A current semantic memory and its auto-memory kind."""

    record: MemoryRecord
    kind: MemoryKind


def exportable(ctx: EngineContext, tenant_id: str, project_id: str | None) -> list[Exportable]:
    """Current semantic memories of the four kinds (of ``project_id`` and of no project)."""
    flt = PointFilter(equals={"status": Status.CURRENT.value})
    out: list[Exportable] = []
    for point in ctx.vectors.scroll(tenant_id, Layer.SEMANTIC, flt):
        record = MemoryRecord.from_payload(dict(point.payload))
        if project_id and record.meta.project_id not in ("", project_id):
            continue
        kind = classify(record)
        if kind is not None:
            out.append(Exportable(record, kind))
    return out


def import_texts(
    ctx: EngineContext,
    tenant_id: str,
    items: Sequence[tuple[str, MemoryKind | None, str]],
    agent: str,
    now: datetime,
) -> list[tuple[str, list[str]]]:
    """Ingest texts found in an agent's memory files; ``(new id, ids it retired)`` each.

    ``items``: (text, kind if known, project id). Through :func:`ingest_batch`, so dedup and
    supersede apply exactly as for any write. The kind, when known, is pinned with an
    ``automemory:<kind>`` entity id so a round trip keeps it.

    Raises:
        NikaError: the first item the engine refused (nothing after it is lost: the caller
            records only what was imported, and the next sync retries the rest).
    """
    reqs = [
        RememberRequest(
            tenant_id=tenant_id,
            text=text,
            meta=NikaMeta(
                timestamp=now,
                trigger=Trigger.USER,
                agent_type=agent,
                project_id=project_id,
                entity_ids=(f"{KIND_TAG_PREFIX}{kind.value}",) if kind else (),
            ),
        )
        for text, kind, project_id in items
    ]
    out: list[tuple[str, list[str]]] = []
    for result in ingest_batch(ctx, reqs) if reqs else []:
        if isinstance(result, NikaError):
            raise result
        out.append((result.duplicate_of or result.id, list(result.retired)))
    return out


def project_of(ctx: EngineContext, tenant_id: str, memory_id: str, default: str) -> str:
    """The project of a stored memory (an edit of it belongs to the same project)."""
    points = ctx.vectors.retrieve(tenant_id, Layer.SEMANTIC, [memory_id])
    return str(points[0].payload.get("project_id") or "") if points else default


def manifest_path(tenant_id: str, target: str, key: str, where: Roots) -> Path:
    """``{data}/tenants/{t}/automemory/{target}-{key}.json`` (outside the agent's directory)."""
    return where.tenant_data_dir(tenant_id) / "automemory" / f"{target}-{key}.json"


def load_manifest(path: Path) -> Manifest:
    """The manifest at ``path`` (empty if absent or unreadable: everything counts as new)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Manifest()
    return Manifest.from_json(raw) if isinstance(raw, dict) else Manifest()


def save_manifest(path: Path, manifest: Manifest, shadowed: set[str]) -> None:
    """Write the manifest (0600) with the ids no longer to export."""
    ensure_private_dir(path.parent)
    data = manifest.to_json()
    data["shadowed"] = sorted(shadowed)
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True))


def load_shadowed(path: Path) -> set[str]:
    """Memory ids an edit or a deletion took over: never exported again."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    value = raw.get("shadowed") if isinstance(raw, dict) else None
    return {str(x) for x in value} if isinstance(value, list) else set()
