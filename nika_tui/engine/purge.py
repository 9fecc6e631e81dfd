"""The purge doctrine: « Pas de purge sans remplacement » (seed 1).

A *plan* lists what would leave the live index, each with its replacement if any:

- ``merged_duplicate`` — retired by the REM merge/promote (a duplicate carries nothing its
  keeper lacks): eligible at once;
- ``superseded`` — an archived contradiction (retired by a judge's REPLACE or an approved
  review, superseded by the newer fact): eligible once past the retention;
- ``retired`` — any other retirement (e.g. the hierarchy marked its job obsolete): eligible
  once past the retention.

The retention (default 30 days, ``NIKA_PURGE_RETENTION_DAYS``) keeps recent history readable
with ``nika memory history``.

*Applying* a plan, item by item:

1. make sure the replacement is indexed and current first (follow its own ``superseded_by``
   chain to the current end; restore it from the archive if it was purged); no current
   replacement → the item is skipped, so a query never falls into a hole;
2. skip ids a live session still holds in ``nika:rag:active_refs`` (and say which session);
3. archive the point — vector and payload — to ``{data}/tenants/{t}/archive/{day}.jsonl``
   (0600, fsync'd), then delete it from the live index;
4. log ``purge.removed`` on the bus with reason, timestamp and replacement id.

``restore`` puts archived points back (``purge.restored``). Applying needs a confirmation
unless the tenant's ``auto_actions.purge`` is ``autonomous``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from nika_tui.domain import protocol_replies as rep
from nika_tui.domain import protocol_requests as req
from nika_tui.domain.iso_time import parse_iso_utc
from nika_tui.domain.memory import Layer, Status
from nika_tui.domain.ports import PointFilter, VectorPoint
from nika_tui.domain.tenant import AutoMode
from nika_tui.engine.context import EngineContext
from nika_tui.engine.recall import active_sessions
from nika_tui.errors import ConfirmationRequired, ValidationFailed
from nika_tui.paths import FILE_MODE, Roots, ensure_private_dir, roots
from nika_tui.services.kernel_store import pending_confirmation, queue_confirmation

MERGED_PREFIXES = ("rem: merged duplicate", "rem: promoted to semantic")
PURGE_CONFIRMATION = "purge.apply"
MAX_CHAIN = 20
"""Longest ``superseded_by`` chain followed to find a current replacement."""


@dataclass(frozen=True, slots=True)
class PurgeItem:
    """One point a plan would remove."""

    id: str
    layer: str
    reason: str
    replacement_id: str | None
    retired_at: str | None
    text: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@dataclass
class PurgePlan:
    """What a purge would remove, computed from the live index."""

    tenant_id: str
    at: datetime
    retention_days: float
    items: list[PurgeItem] = field(default_factory=list)
    not_yet: int = 0
    """Retired points kept because they are inside the retention."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "tenant_id": self.tenant_id,
            "at": self.at.isoformat(),
            "retention_days": self.retention_days,
            "items": [i.to_dict() for i in self.items],
            "count": len(self.items),
            "kept_within_retention": self.not_yet,
        }


@dataclass
class PurgeResult:
    """What applying a plan did."""

    tenant_id: str
    removed: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    restored_replacements: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "tenant_id": self.tenant_id,
            "removed": self.removed,
            "skipped": self.skipped,
            "restored_replacements": self.restored_replacements,
            "removed_count": len(self.removed),
            "skipped_count": len(self.skipped),
        }


def archive_dir(tenant_id: str, where: Roots | None = None) -> Path:
    """``{data}/tenants/{t}/archive``."""
    return (where or roots()).tenant_data_dir(tenant_id) / "archive"


def classify(payload: Mapping[str, Any]) -> str:
    """``merged_duplicate``, ``superseded`` or ``retired`` (see the module docstring)."""
    reason = str(payload.get("retire_reason") or "")
    if reason.startswith(MERGED_PREFIXES):
        return "merged_duplicate"
    if payload.get("superseded_by"):
        return "superseded"
    return "retired"


def plan(ctx: EngineContext, tenant_id: str, retention: float | None = None) -> PurgePlan:
    """Compute the purge plan of a tenant (reads only).

    Args:
        ctx: Engine context.
        tenant_id: The tenant.
        retention: Days a superseded/retired point stays (default from the environment).

    Returns:
        The plan, oldest retirement first.
    """
    ctx.tenant(tenant_id)
    days = ctx.settings.purge_retention_days if retention is None else retention
    now = ctx.clock()
    cutoff = now - timedelta(days=days)
    result = PurgePlan(tenant_id, now, days)
    retired = PointFilter(equals={"status": Status.RETIRED.value})
    for layer in Layer:
        for p in ctx.vectors.scroll(tenant_id, layer, retired, batch=512):
            kind = classify(p.payload)
            at = parse_iso_utc(p.payload.get("retired_at"))
            if kind != "merged_duplicate" and (at is None or at > cutoff):
                result.not_yet += 1
                continue
            result.items.append(
                PurgeItem(
                    id=p.id,
                    layer=layer.value,
                    reason=kind,
                    replacement_id=p.payload.get("superseded_by") or None,
                    retired_at=p.payload.get("retired_at"),
                    text=str(p.payload.get("text", ""))[:200],
                )
            )
    result.items.sort(key=lambda i: (i.retired_at or "", i.id))
    return result


class Archive:
    """One tenant's archive: JSONL files of removed points, with their vectors."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def write(self, entry: Mapping[str, Any], day: str) -> Path:
        """Append one archived point durably (fsync) and return the file."""
        ensure_private_dir(self.root)
        path = self.root / f"{day}.jsonl"
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        return path

    def entries(self) -> Iterator[dict[str, Any]]:
        """Every archived point, oldest file first (torn lines skipped)."""
        if not self.root.is_dir():
            return
        for path in sorted(self.root.glob("*.jsonl")):
            with path.open(encoding="utf-8", errors="replace") as fh:
                for raw in fh:
                    try:
                        data = json.loads(raw)
                    except json.JSONDecodeError:
                        continue
                    if isinstance(data, dict) and "id" in data:
                        yield data

    def find(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The latest archived entry of each id found."""
        wanted = set(ids)
        found: dict[str, dict[str, Any]] = {}
        for e in self.entries():
            if e["id"] in wanted:
                found[e["id"]] = e
        return found


def _live(
    ctx: EngineContext, tenant_id: str, point_id: str
) -> tuple[Layer, Mapping[str, Any]] | None:
    for layer in Layer:
        found = ctx.vectors.retrieve(tenant_id, layer, [point_id])
        if found:
            return layer, found[0].payload
    return None


def _upsert_entry(ctx: EngineContext, tenant_id: str, entry: Mapping[str, Any]) -> None:
    payload = dict(entry["payload"])
    ctx.vectors.upsert(
        tenant_id,
        Layer(entry["layer"]),
        [VectorPoint(str(entry["id"]), entry["vector"], str(payload.get("text", "")), payload)],
    )


def ensure_replacement(
    ctx: EngineContext, tenant_id: str, replacement_id: str, archive: Archive, result: PurgeResult
) -> str | None:
    """Step 1: the current end of the replacement chain, indexed; None when there is none.

    A replacement that was itself purged is restored from the archive first.
    """
    rid: str | None = replacement_id
    for _ in range(MAX_CHAIN):
        if rid is None:
            return None
        live = _live(ctx, tenant_id, rid)
        if live is None:
            entry = archive.find([rid]).get(rid)
            if entry is None:
                return None
            _upsert_entry(ctx, tenant_id, entry)
            result.restored_replacements.append(rid)
            live = (Layer(entry["layer"]), entry["payload"])
        _layer, payload = live
        if payload.get("status") == Status.CURRENT.value:
            return rid
        rid = payload.get("superseded_by") or None
    return None


def apply(
    ctx: EngineContext,
    tenant_id: str,
    *,
    confirmed: bool = False,
    retention: float | None = None,
    ids: Sequence[str] | None = None,
) -> PurgeResult:
    """Apply the tenant's purge plan (steps 1-4 of the doctrine, item by item).

    Args:
        ctx: Engine context (the service: the single writer).
        tenant_id: The tenant.
        confirmed: A person confirmed (``--yes``); not needed when auto-purge is autonomous.
        retention: Days (default from the environment).
        ids: Only these planned ids (default: the whole plan).

    Returns:
        What was removed and what was skipped, with why.

    Raises:
        ConfirmationRequired: Not confirmed and auto-purge is not autonomous.
    """
    config = ctx.tenant(tenant_id)
    if not confirmed and config.auto_actions.purge is not AutoMode.AUTONOMOUS:
        if config.auto_actions.purge is AutoMode.ESCALATE and not pending_confirmation(
            ctx.redis, tenant_id, PURGE_CONFIRMATION
        ):
            # escalate: the request waits in the dashboard's confirmations for a person
            count = len(plan(ctx, tenant_id, retention).items)
            queue_confirmation(
                ctx.redis,
                tenant_id,
                PURGE_CONFIRMATION,
                f"purge {count} retired memories from the live index",
                f"review with `nika purge plan --tenant {tenant_id}`; archived, restorable",
                ctx.clock(),
            )
        raise ConfirmationRequired(
            f"purging tenant {tenant_id!r} needs a confirmation",
            f"review `nika purge plan --tenant {tenant_id}`, then re-run with --yes "
            "(or set auto-actions purge to autonomous)",
        )
    the_plan = plan(ctx, tenant_id, retention)
    wanted = set(ids) if ids is not None else None
    archive = Archive(archive_dir(tenant_id, ctx.settings.roots))
    result = PurgeResult(tenant_id)
    for item in the_plan.items:
        if wanted is not None and item.id not in wanted:
            continue
        replacement: str | None = None
        if item.replacement_id:
            replacement = ensure_replacement(ctx, tenant_id, item.replacement_id, archive, result)
            if replacement is None:
                result.skipped.append(
                    {"id": item.id, "why": f"replacement {item.replacement_id} is not current"}
                )
                continue
        now = ctx.clock()
        holders = active_sessions(ctx.redis, tenant_id, item.id, now.timestamp())
        if holders:
            result.skipped.append(
                {"id": item.id, "why": "held by an active session", "sessions": holders}
            )
            continue
        layer = Layer(item.layer)
        found = ctx.vectors.retrieve(tenant_id, layer, [item.id], with_vectors=True)
        if not found or found[0].vector is None:
            continue  # gone meanwhile
        point = found[0]
        vector = list(point.vector or ())
        path = archive.write(
            {
                "id": point.id,
                "layer": layer.value,
                "vector": vector,
                "payload": dict(point.payload),
                "archived_at": now.isoformat(),
                "reason": item.reason,
                "replacement_id": replacement,
            },
            now.date().isoformat(),
        )
        ctx.vectors.delete(tenant_id, layer, [item.id])
        ctx.bus(tenant_id).append(
            "purge.removed",
            {
                "memory_id": item.id,
                "layer": layer.value,
                "reason": item.reason,
                "replacement_id": replacement,
                "timestamp": now.isoformat(),
                "archive": path.name,
            },
            now=now,
        )
        result.removed.append({"id": item.id, "reason": item.reason, "replacement_id": replacement})
    return result


def restore(ctx: EngineContext, tenant_id: str, ids: Sequence[str] | None = None) -> list[str]:
    """Put archived points back into the live index (as they were: usually retired).

    Args:
        ctx: Engine context.
        tenant_id: The tenant.
        ids: Ids to restore; None restores every archived point not live.

    Returns:
        The restored ids.

    Raises:
        ValidationFailed: An asked id is in no archive.
    """
    ctx.tenant(tenant_id)
    archive = Archive(archive_dir(tenant_id, ctx.settings.roots))
    if ids is None:
        entries = {e["id"]: e for e in archive.entries()}
    else:
        entries = archive.find(ids)
        missing = [i for i in ids if i not in entries]
        if missing:
            raise ValidationFailed(
                f"not in the archive of {tenant_id!r}: {', '.join(missing)}",
                "list archived ids in the files under " + str(archive.root),
            )
    restored: list[str] = []
    for mid, entry in entries.items():
        if _live(ctx, tenant_id, mid) is not None:
            continue
        _upsert_entry(ctx, tenant_id, entry)
        ctx.bus(tenant_id).append(
            "purge.restored", {"memory_id": mid, "layer": entry["layer"]}, now=ctx.clock()
        )
        restored.append(mid)
    return restored


def purge_plan_op(ctx: EngineContext, r: req.PurgePlanRequest) -> rep.PurgePlanReply:
    return rep.PurgePlanReply(plan(ctx, r.tenant_id, r.retention_days).to_dict())


def purge_apply_op(ctx: EngineContext, r: req.PurgeApplyRequest) -> rep.PurgeApplyReply:
    result = apply(
        ctx, r.tenant_id, confirmed=bool(r.confirmed), retention=r.retention_days, ids=r.ids
    )
    return rep.PurgeApplyReply(result.to_dict())


def purge_restore_op(ctx: EngineContext, r: req.PurgeRestoreRequest) -> rep.PurgeRestoreReply:
    restored = restore(ctx, r.tenant_id, r.ids)
    return rep.PurgeRestoreReply(restored, len(restored))
