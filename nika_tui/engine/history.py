"""``nika memory history ID``: the chain of what replaced what.

Starting from one memory, the chain follows ``superseded_by`` forward (what replaced it) and
backward (what it replaced, found by payload filter), in both layers' stores of the tenant only.

After a fresh start (``nika compress --reset``) the retired versions are no longer in the store:
they are in the reset's snapshot. :func:`earlier_snapshots` names it, so a chain that stops
there says where the rest is (``nika snapshot history PATH ID``).
"""

from __future__ import annotations

from collections.abc import Sequence

from nika_tui.domain.memory import MemoryRecord
from nika_tui.domain.ports import PointFilter
from nika_tui.engine.context import EngineContext
from nika_tui.engine.retire import load_record
from nika_tui.engine.snapshot.restore import HISTORY_SNAPSHOTS, snapshot_dir
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


def earlier_snapshots(
    ctx: EngineContext, tenant_id: str, chain: Sequence[MemoryRecord]
) -> list[str]:
    """The snapshots holding older versions of ``chain`` (paths, oldest reset first).

    The chain's memories carry the ids of the snapshots their earlier versions went to
    (set by the reset that left those versions behind); a chain without any ends here.
    """
    ids: list[str] = []
    for rec in chain:
        for p in ctx.vectors.retrieve(tenant_id, rec.layer, [rec.id]):
            for snap in p.payload.get(HISTORY_SNAPSHOTS) or []:
                if str(snap) not in ids:
                    ids.append(str(snap))
    return [str(snapshot_dir(ctx.settings.roots, tenant_id, i)) for i in sorted(ids)]
