"""Retiring a memory closes the pending review pairs that name it (issue 21, decision 391).

A pair asks a person "does the new fact replace the old one?". Once either side is retired
(a supersede by a third fact, an agent's correction applied at once, another pair approved)
the question is moot, and answering it could retire a fact twice or revive a stale pair. Such
an item is closed as ``obsolete``: kept in the queue's history, never shown as pending.

A set per memory (``review_refs``) names the items that mention it, so a retire reads only
those, not the whole queue (a flood of similar facts queues thousands of pairs). This module
works on the items' JSON because :mod:`~nika_tui.engine.review` imports
:mod:`~nika_tui.engine.retire`, which calls :func:`close_reviews_of`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import redis

from nika_tui.engine.context import EngineContext
from nika_tui.services import redis_keys

PENDING = "pending"
OBSOLETE = "obsolete"
"""``ReviewStatus`` values (the enum lives in ``review``, which imports this module's caller)."""


def index_reviews(
    pipe: redis.client.Pipeline, tenant_id: str, items: Iterable[tuple[str, str, str]]
) -> None:
    """Add ``(item id, old id, new id)`` triples to the per-memory sets, on ``pipe``."""
    for item_id, old_id, new_id in items:
        for memory_id in (old_id, new_id):
            if memory_id:
                pipe.sadd(redis_keys.review_refs(tenant_id, memory_id), item_id)


def close_reviews_of(
    ctx: EngineContext, tenant_id: str, memory_id: str, *, keep: str = ""
) -> list[str]:
    """Close every pending review item that names ``memory_id`` (it was just retired).

    Args:
        ctx: engine context.
        tenant_id: owner of the memory.
        memory_id: the retired memory.
        keep: an item left as it is (the one whose approval retired the memory).

    Returns:
        The ids of the items closed, each logged as ``review.closed`` on the bus.
    """
    refs = redis_keys.review_refs(tenant_id, memory_id)
    ids = sorted(str(i) for i in ctx.redis.smembers(refs) if str(i) != keep)
    if not ids:
        return []
    queue = redis_keys.review_queue(tenant_id)
    now = ctx.clock()
    closed: list[dict[str, Any]] = []
    pipe = ctx.redis.pipeline(transaction=False)
    for raw in ctx.redis.hmget(queue, ids):
        item = json.loads(str(raw)) if raw else None
        if item is None or item.get("status") != PENDING:
            continue
        item.update(status=OBSOLETE, resolved_at=now.isoformat(), note=f"{memory_id} retired")
        # Compact, like pydantic's dump: the dashboard counts pending items by substring.
        pipe.hset(queue, str(item["id"]), json.dumps(item, separators=(",", ":")))
        closed.append(item)
    pipe.srem(refs, *ids)
    pipe.execute()
    if closed:
        ctx.bus(tenant_id).append_many(
            [
                (
                    "review.closed",
                    {
                        "review_id": item["id"],
                        "old_id": item["old_id"],
                        "new_id": item["new_id"],
                        "retired": memory_id,
                    },
                    None,
                    now,
                )
                for item in closed
            ]
        )
    return [str(item["id"]) for item in closed]
