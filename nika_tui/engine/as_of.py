"""Recall "as of" a date: keep the hits that were the current version then (by valid time).

The store has no range filter on valid time, so the recall fetches retired versions too and
this module keeps those :func:`nika_tui.domain.timeline.current_at` accepts, loading each
hit's successor (one retrieve per layer) to know when it stopped being true.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from nika_tui.domain.memory import Layer, MemoryRecord
from nika_tui.domain.requests import RecallHit
from nika_tui.domain.timeline import current_at
from nika_tui.engine.context import EngineContext


def successors(
    ctx: EngineContext, tenant_id: str, records: Sequence[MemoryRecord]
) -> dict[str, MemoryRecord]:
    """``{id: record}`` of the memories that superseded ``records`` (one retrieve per layer)."""
    wanted: dict[Layer, set[str]] = {}
    for rec in records:
        if rec.superseded_by:
            wanted.setdefault(rec.layer, set()).add(rec.superseded_by)
    out: dict[str, MemoryRecord] = {}
    for layer, ids in wanted.items():
        for p in ctx.vectors.retrieve(tenant_id, layer, sorted(ids)):
            out[p.id] = MemoryRecord.from_payload(dict(p.payload))
    return out


def current_hits(
    ctx: EngineContext, tenant_id: str, hits: Sequence[RecallHit], as_of: datetime
) -> list[RecallHit]:
    """The hits that were current at ``as_of``, in their order."""
    after = successors(ctx, tenant_id, [h.record for h in hits])
    return [
        h
        for h in hits
        if current_at(
            h.record,
            after.get(h.record.superseded_by) if h.record.superseded_by else None,
            as_of,
        )
    ]
