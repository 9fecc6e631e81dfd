"""Retire a memory: cross the line out of the ledger, never tear the page (seed 2).

Retiring sets ``status=retired``, ``retired_at``, ``superseded_by`` and ``retire_reason`` on the
point's payload and logs ``memory.retired`` on the tenant's bus. Nothing is deleted: history and
``--include-retired`` recalls still find it.

A digest memory (``kind: digest``, written by a fresh start, :mod:`.reset`) condenses other
memories (``condenses``); once one of them is retired the digest states something no longer
current, so it is retired with it (its reason names the fact and what replaced it).
"""

from __future__ import annotations

from nika_tui.domain.memory import Layer, MemoryRecord, Status
from nika_tui.domain.ports import PointFilter
from nika_tui.engine.context import EngineContext
from nika_tui.engine.review_refs import close_reviews_of
from nika_tui.errors import ValidationFailed
from nika_tui.services import redis_keys


def load_record(ctx: EngineContext, tenant_id: str, memory_id: str) -> MemoryRecord | None:
    """The record with ``memory_id`` in either layer of ``tenant_id`` (None when absent)."""
    for layer in Layer:
        found = ctx.vectors.retrieve(tenant_id, layer, [memory_id])
        if found:
            return MemoryRecord.from_payload(dict(found[0].payload))
    return None


def retire(
    ctx: EngineContext,
    tenant_id: str,
    layer: Layer,
    memory_id: str,
    superseded_by: str | None,
    reason: str,
    *,
    resolving: str = "",
) -> None:
    """Mark one memory retired (idempotent: an already retired memory is left as it is).

    The pending review pairs that name it are closed (:func:`close_reviews_of`).

    Args:
        ctx: engine context.
        tenant_id: owner of the memory.
        layer: its layer.
        memory_id: the point to retire.
        superseded_by: id of the memory that replaces it, if any.
        reason: why, in words a person can read (the judge's reason, a review decision…).
        resolving: the review item whose approval retires it (resolved by the caller).

    Raises:
        ValidationFailed: no such memory in this tenant and layer.
    """
    found = ctx.vectors.retrieve(tenant_id, layer, [memory_id])
    if not found:
        raise ValidationFailed(
            f"no memory {memory_id} in tenant {tenant_id!r} ({layer.value})",
            "check the id with `nika memory recall --include-retired`",
        )
    if found[0].payload.get("status") == Status.RETIRED.value:
        return
    now = ctx.clock()
    ctx.vectors.set_payload(
        tenant_id,
        layer,
        memory_id,
        {
            "status": Status.RETIRED.value,
            "retired_at": now.isoformat(),
            "superseded_by": superseded_by,
            "retire_reason": reason,
        },
    )
    body = {
        "memory_id": memory_id,
        "layer": layer.value,
        "superseded_by": superseded_by,
        "reason": reason,
    }
    ctx.bus(tenant_id).append("memory.retired", body, now=now)
    ctx.redis.hincrby(redis_keys.metrics(tenant_id), "retired", 1)
    ctx.redis.xadd(
        redis_keys.ENTITY_FEED,
        {"event": "retired", "tenant_id": tenant_id, "id": memory_id},
        maxlen=10_000,
        approximate=True,
    )
    close_reviews_of(ctx, tenant_id, memory_id, keep=resolving)
    retire_digests_of(ctx, tenant_id, memory_id, superseded_by)


def retire_digests_of(
    ctx: EngineContext, tenant_id: str, memory_id: str, superseded_by: str | None
) -> list[str]:
    """Retire the current digest memories that condense ``memory_id`` (just retired).

    A digest's text quotes the facts it condenses: left current, it would answer a recall
    with the replaced value. Retiring it (not editing it) keeps the rule that a stored text
    never changes; the facts it condensed that still hold stay current on their own, and the
    next compression writes a new digest. A digest condensing a digest is retired in turn.

    Returns:
        The ids of the digests retired.
    """
    flt = PointFilter(
        equals={"status": Status.CURRENT.value, "kind": "digest", "condenses": memory_id}
    )
    done: list[str] = []
    for layer in Layer:
        for p in list(ctx.vectors.scroll(tenant_id, layer, flt, 64)):
            why = f"a memory it condenses ({memory_id}) was retired" + (
                f", replaced by {superseded_by}" if superseded_by else ""
            )
            # No ``superseded_by``: the new fact is not a new version of the digest, and
            # ``nika memory history`` of that fact must not list the digest as its past.
            retire(ctx, tenant_id, layer, str(p.id), None, why)
            done.append(str(p.id))
    return done
