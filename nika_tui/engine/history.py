"""``nika memory history ID``: the chain of what replaced what.

Starting from one memory, the chain follows ``superseded_by`` forward (what replaced it) and
backward (what it replaced, found by payload filter), in both layers' stores of the tenant only.
"""

from __future__ import annotations

from nika_tui.domain.memory import MemoryRecord
from nika_tui.domain.ports import PointFilter
from nika_tui.engine.context import EngineContext
from nika_tui.engine.retire import load_record
from nika_tui.errors import ValidationFailed

MAX_CHAIN = 200
"""Safety bound on the chain length (a cycle cannot occur, but a bound costs nothing)."""


def history(ctx: EngineContext, tenant_id: str, memory_id: str) -> list[MemoryRecord]:
    """Every memory linked to ``memory_id`` by supersession, oldest valid time first.

    Raises:
        TenantNotFound: unknown tenant.
        ValidationFailed: no such memory in this tenant.
    """
    ctx.tenant(tenant_id)
    start = load_record(ctx, tenant_id, memory_id)
    if start is None:
        raise ValidationFailed(
            f"no memory {memory_id} in tenant {tenant_id!r}",
            "take an id from `nika memory recall --include-retired --json`",
        )
    seen: dict[str, MemoryRecord] = {start.id: start}
    todo = [start]
    while todo and len(seen) < MAX_CHAIN:
        rec = todo.pop()
        linked: list[MemoryRecord] = []
        if rec.superseded_by and rec.superseded_by not in seen:
            nxt = load_record(ctx, tenant_id, rec.superseded_by)
            if nxt is not None:
                linked.append(nxt)
        for p in ctx.vectors.scroll(
            tenant_id, rec.layer, PointFilter(equals={"superseded_by": rec.id}), batch=64
        ):
            if p.id not in seen:
                linked.append(MemoryRecord.from_payload(dict(p.payload)))
        for item in linked:
            seen[item.id] = item
            todo.append(item)
    return sorted(seen.values(), key=lambda r: (r.valid_from, r.asserted_at, r.id))
