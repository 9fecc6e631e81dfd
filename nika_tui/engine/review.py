"""The review queue: every UNCERTAIN (old, new) pair waits here for a person.

Durable: one Redis hash per tenant (``review_queue``), persisted by AOF, so the queue survives
service and Redis restarts. An item's id is derived from the pair, so a replayed ingest never
queues the same pair twice, and a pair a person already rejected is not asked again.
Approve = apply REPLACE (retire the old memory, superseded by the new); reject = keep both.
Every request and resolution is logged on the tenant's bus.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum

import redis
from pydantic import BaseModel, ConfigDict

from nika_tui.domain.memory import Layer, MemoryRecord
from nika_tui.domain.verdicts import Judgement
from nika_tui.engine.context import EngineContext
from nika_tui.engine.retire import retire
from nika_tui.engine.review_refs import index_reviews
from nika_tui.errors import ValidationFailed
from nika_tui.services import redis_keys

_REVIEW_NS = uuid.UUID("0b9b8f3e-2c55-5d0a-a6a1-5c1f7e3d9a24")


class ReviewStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    OBSOLETE = "obsolete"
    """Closed unanswered: one of its memories was retired first (``review_refs``)."""


class Decision(StrEnum):
    APPROVE = "approve"
    KEEP = "keep"
    """Keep both memories current (what the dashboard's "keep both" sends)."""
    REJECT = "reject"
    """The CLI's older name for :attr:`KEEP`: logged as ``keep``, since both stay current."""


class ReviewItem(BaseModel):
    """One UNCERTAIN pair and, once resolved, what a person decided."""

    model_config = ConfigDict(extra="forbid")

    id: str
    tenant_id: str
    layer: Layer
    old_id: str
    new_id: str
    old_text: str
    new_text: str
    old_valid_from: datetime
    new_valid_from: datetime
    reason: str
    judge: str
    created_at: datetime
    status: ReviewStatus = ReviewStatus.PENDING
    resolved_at: datetime | None = None
    note: str = ""


def review_id(old_id: str, new_id: str) -> str:
    """Stable id of a pair (12 hex chars: short enough to type)."""
    return uuid.uuid5(_REVIEW_NS, f"{old_id}>{new_id}").hex[:12]


def get_item(r: redis.Redis, tenant_id: str, item_id: str) -> ReviewItem | None:
    """One item (any status), or None."""
    raw = r.hget(redis_keys.review_queue(tenant_id), item_id)
    return ReviewItem.model_validate_json(str(raw)) if raw else None


def list_items(r: redis.Redis, tenant_id: str, include_resolved: bool = False) -> list[ReviewItem]:
    """Items of a tenant, oldest first; pending only unless ``include_resolved``."""
    raw = r.hgetall(redis_keys.review_queue(tenant_id))
    items = [ReviewItem.model_validate_json(v) for v in raw.values()]
    if not include_resolved:
        items = [i for i in items if i.status is ReviewStatus.PENDING]
    return sorted(items, key=lambda i: (i.created_at, i.id))


def new_item(
    ctx: EngineContext, old: MemoryRecord, new: MemoryRecord, judgement: Judgement
) -> ReviewItem:
    """The review item of an UNCERTAIN pair, not queued yet (:func:`enqueue_many` queues it)."""
    return ReviewItem(
        id=review_id(old.id, new.id),
        tenant_id=new.tenant_id,
        layer=new.layer,
        old_id=old.id,
        new_id=new.id,
        old_text=old.text,
        new_text=new.text,
        old_valid_from=old.valid_from,
        new_valid_from=new.valid_from,
        reason=judgement.reason,
        judge=judgement.judge,
        created_at=ctx.clock(),
    )


def enqueue_many(ctx: EngineContext, items: Sequence[ReviewItem]) -> list[ReviewItem]:
    """Queue UNCERTAIN pairs (idempotent) and log ``review.requested`` for each newly queued.

    Per tenant: one HMGET, one pipeline of HSETNX and one bus append (one fsync). The memory
    service queues a whole ingest batch's pairs this way, before the batch is flushed and
    acknowledged: a crash before that replays the batch, which judges the pairs again (both
    memories are still current) and queues them then. One append and one fsync per pair was
    half of the ingest's CPU when new facts keep restating old ones (measured).

    Returns:
        For each item, in order: the item, or the one already queued or resolved for its pair.
    """
    unique = {item.id: item for item in items}
    by_tenant: dict[str, list[ReviewItem]] = {}
    for item in unique.values():
        by_tenant.setdefault(item.tenant_id, []).append(item)
    found: dict[str, ReviewItem] = {}
    for tenant_id, group in by_tenant.items():
        key = redis_keys.review_queue(tenant_id)
        stored = ctx.redis.hmget(key, [item.id for item in group])
        fresh: list[ReviewItem] = []
        for item, raw in zip(group, stored, strict=True):
            if raw:
                found[item.id] = ReviewItem.model_validate_json(str(raw))
            else:
                fresh.append(item)
        if not fresh:
            continue
        pipe = ctx.redis.pipeline(transaction=False)
        for item in fresh:
            pipe.hsetnx(key, item.id, item.model_dump_json())
        index_reviews(pipe, tenant_id, [(i.id, i.old_id, i.new_id) for i in fresh])
        set_flags = pipe.execute()[: len(fresh)]
        queued = [item for item, was_set in zip(fresh, set_flags, strict=True) if was_set]
        # HSETNX: of two concurrent enqueues of one pair, the first is kept and logs it.
        for item in fresh:
            found[item.id] = item
        if not queued:
            continue
        ctx.bus(tenant_id).append_many(
            [
                (
                    "review.requested",
                    {
                        "review_id": item.id,
                        "old_id": item.old_id,
                        "new_id": item.new_id,
                        "reason": item.reason,
                        "judge": item.judge,
                    },
                    None,
                    item.created_at,
                )
                for item in queued
            ]
        )
    return [found[item.id] for item in items]


def enqueue(
    ctx: EngineContext, old: MemoryRecord, new: MemoryRecord, judgement: Judgement
) -> ReviewItem:
    """Queue one UNCERTAIN pair (idempotent) and log ``review.requested`` on the bus.

    Returns:
        The queued item, or the existing one when the pair was already queued or resolved.
    """
    return enqueue_many(ctx, [new_item(ctx, old, new, judgement)])[0]


def resolve(
    ctx: EngineContext, tenant_id: str, item_id: str, decision: Decision, note: str = ""
) -> ReviewItem:
    """Apply a person's decision to a pending pair and log ``review.resolved``.

    Args:
        ctx: engine context (the service: approving retires a memory, a write).
        tenant_id: the tenant.
        item_id: the review id shown by ``nika review list``.
        decision: approve (REPLACE: retire the old memory) or reject (KEEP both).
        note: optional words of the person, kept with the item.

    Raises:
        ValidationFailed: unknown id, or an item already resolved.
    """
    ctx.tenant(tenant_id)
    item = get_item(ctx.redis, tenant_id, item_id)
    if item is None:
        raise ValidationFailed(
            f"no review {item_id!r} for tenant {tenant_id!r}",
            f"list pending reviews with `nika review list --tenant {tenant_id}`",
        )
    if item.status is not ReviewStatus.PENDING:
        raise ValidationFailed(f"review {item_id} was already {item.status.value}", "nothing to do")
    now = ctx.clock()
    if decision is Decision.APPROVE:
        retire(
            ctx,
            tenant_id,
            item.layer,
            item.old_id,
            # An agent's retire request has no new memory (new_id "").
            superseded_by=item.new_id or None,
            reason=f"review {item_id} approved: {item.reason}"[:500],
            resolving=item_id,
        )
        status = ReviewStatus.APPROVED
    else:
        status = ReviewStatus.REJECTED
    resolved = item.model_copy(update={"status": status, "resolved_at": now, "note": note})
    ctx.redis.hset(redis_keys.review_queue(tenant_id), item_id, resolved.model_dump_json())
    ctx.bus(tenant_id).append(
        "review.resolved",
        {
            "review_id": item_id,
            # "reject" kept both memories: the bus says what happened, not the CLI's verb.
            "decision": "keep" if decision is Decision.REJECT else decision.value,
            "old_id": item.old_id,
            "new_id": item.new_id,
            "note": note,
        },
        now=now,
    )
    return resolved
