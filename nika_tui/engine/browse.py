"""The dashboard's memory browser ops: list a tenant's memories, retire, restore, send to review.

A person (not an agent) acts here, so a retire is applied at once (as ``nika review`` approving
a pair would be) and restore is allowed; both are logged on the bus with who asked. The list is
one scroll of the tenant's layers (the store has no ordered index): linear in the tenant's size,
fine for a screen opened by hand, and a page is at most :data:`LIST_MAX` rows (``offset`` gives
the next page, so every memory can be reached).
"""

from __future__ import annotations

from datetime import datetime

from nika_tui.domain import protocol_replies as rep
from nika_tui.domain import protocol_requests as req
from nika_tui.domain.memory import Layer, MemoryRecord, Status
from nika_tui.domain.ports import PointFilter
from nika_tui.domain.timeline import current_at, parse_as_of, valid_until
from nika_tui.domain.verdicts import Judgement, Verdict
from nika_tui.engine.context import EngineContext
from nika_tui.engine.retire import load_record, retire
from nika_tui.engine.review import ReviewStatus, enqueue_many, list_items, new_item
from nika_tui.errors import ValidationFailed

LIST_MAX = 500
"""Most rows one ``memory.list`` returns (newest valid time first): one page."""
SCROLL_BATCH = 512


def _in_review(ctx: EngineContext, tenant_id: str) -> dict[str, str]:
    """``{memory id: review id}`` of the memories named by a pending review pair."""
    out: dict[str, str] = {}
    for item in list_items(ctx.redis, tenant_id):
        if item.status is ReviewStatus.PENDING:
            for memory_id in (item.old_id, item.new_id):
                if memory_id:
                    out[memory_id] = item.id
    return out


def _matches(rec: MemoryRecord, flt: req.MemoryListRequest, review: dict[str, str]) -> bool:
    status = flt.status or ""
    if status == "review" and rec.id not in review:
        return False
    if status in (Status.CURRENT.value, Status.RETIRED.value) and rec.status.value != status:
        return False
    project = flt.project_id or ""
    if project and rec.meta.project_id != project:
        return False
    needle = (flt.text or "").casefold()
    return not needle or needle in rec.text.casefold() or needle == rec.id


def list_memories(ctx: EngineContext, flt: req.MemoryListRequest) -> rep.MemoryListReply:
    """The memories of a tenant matching the filters, newest valid time first: the page of at
    most ``limit`` (itself at most :data:`LIST_MAX`) after the first ``offset`` matches.

    Returns:
        The page's records (each with its ``valid_until`` and ``review_id``) and the total
        matched.
    """
    tenant_id = flt.tenant_id
    ctx.tenant(tenant_id)
    try:
        layers = [Layer(flt.layer)] if flt.layer else list(Layer)
        as_of: datetime | None = parse_as_of(flt.as_of) if flt.as_of else None
    except ValueError as exc:
        raise ValidationFailed(f"invalid memory filter: {exc}", "fix the filter") from exc
    limit = max(1, min(LIST_MAX if flt.limit is None else flt.limit, LIST_MAX))
    start = max(0, flt.offset or 0)
    review = _in_review(ctx, tenant_id)
    every: dict[str, MemoryRecord] = {}
    for layer in layers:
        for p in ctx.vectors.scroll(tenant_id, layer, PointFilter(), batch=SCROLL_BATCH):
            rec = MemoryRecord.from_payload(dict(p.payload))
            every[rec.id] = rec
    rows: list[tuple[MemoryRecord, datetime | None]] = []
    for rec in every.values():
        successor = every.get(rec.superseded_by) if rec.superseded_by else None
        if not _matches(rec, flt, review):
            continue
        if as_of is not None and not current_at(rec, successor, as_of):
            continue
        rows.append((rec, valid_until(rec, successor)))
    rows.sort(key=lambda r: (r[0].valid_from, r[0].id), reverse=True)
    records = [
        {
            **rec.model_dump(mode="json"),
            "valid_until": until.isoformat() if until else None,
            "review_id": review.get(rec.id, ""),
        }
        for rec, until in rows[start : start + limit]
    ]
    return rep.MemoryListReply(records, len(rows))


def _record(ctx: EngineContext, tenant_id: str, memory_id: str) -> MemoryRecord:
    rec = load_record(ctx, tenant_id, memory_id)
    if rec is None:
        raise ValidationFailed(
            f"no memory {memory_id} in tenant {tenant_id!r}", "refresh the memory browser"
        )
    return rec


def person_retire(ctx: EngineContext, r: req.MemoryRetireRequest) -> rep.MemoryRetireReply:
    """Retire one memory now, for a person."""
    tenant_id = r.tenant_id
    ctx.tenant(tenant_id)
    rec = _record(ctx, tenant_id, r.memory_id)
    if rec.status is Status.RETIRED:
        return rep.MemoryRetireReply("already-retired", rec.id)
    reason = (r.reason or "retired from the dashboard")[:500]
    retire(ctx, tenant_id, rec.layer, rec.id, None, f"person: {reason}")
    return rep.MemoryRetireReply("retired", rec.id)


def restore(ctx: EngineContext, r: req.MemoryRestoreRequest) -> rep.MemoryRestoreReply:
    """Make a retired memory current again (a person's optional reason is logged).

    Its successor, if any, stays current too: two current facts is what a person restoring
    asks for; the judge or a review settles them later. Logged as ``memory.restored``.
    """
    tenant_id = r.tenant_id
    ctx.tenant(tenant_id)
    rec = _record(ctx, tenant_id, r.memory_id)
    if rec.status is Status.CURRENT:
        return rep.MemoryRestoreReply("already-current", rec.id)
    patch = {"status": Status.CURRENT.value, "retired_at": None}
    patch |= {"superseded_by": None, "retire_reason": None}
    ctx.vectors.set_payload(tenant_id, rec.layer, rec.id, patch)
    now = ctx.clock()
    reason = (r.reason or "restored from the dashboard")[:500]
    # The payload forgets the retirement; the bus line keeps why it was undone (its history).
    logged: dict[str, str | None] = {"memory_id": rec.id, "layer": rec.layer.value}
    logged |= {"reason": f"person: {reason}", "was_superseded_by": rec.superseded_by}
    ctx.bus(tenant_id).append("memory.restored", logged, now=now)
    return rep.MemoryRestoreReply("restored", rec.id, rec.superseded_by)


def send_to_review(ctx: EngineContext, r: req.MemorySendReviewRequest) -> rep.MemorySendReviewReply:
    """Queue "retire this?" for a later decision.

    The pair's new side names the request, as an agent's retire request does; approving it in
    the review queue retires the memory, keeping both leaves it current.
    """
    tenant_id = r.tenant_id
    ctx.tenant(tenant_id)
    rec = _record(ctx, tenant_id, r.memory_id)
    reason = (r.reason or "sent to review from the dashboard")[:500]
    judgement = Judgement(
        verdict=Verdict.UNCERTAIN, reason=f"person asks: {reason}", judge="person"
    )
    item = new_item(ctx, rec, rec, judgement).model_copy(
        update={
            "id": f"p{rec.id.replace('-', '')[:11]}",
            "new_id": "",
            "new_text": f"(retire? {reason})",
            "new_valid_from": ctx.clock(),
        }
    )
    queued = enqueue_many(ctx, [item])[0]
    return rep.MemorySendReviewReply("review", queued.id, rec.id)
