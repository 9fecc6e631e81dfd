"""The memory ops of the RPC table: recall, history, the review list and decisions, stats.

Reads (recall, history, lists, stats) and person-made writes (review decisions) reach the
single-writer service as RPC requests on ``RPC_STREAM``; :mod:`nika_tui.engine.server.rpc`
maps each :class:`~nika_tui.domain.protocol.Op` to its handler, these and other modules'.
"""

from __future__ import annotations

from typing import Any

from nika_tui.domain import protocol_replies as rep
from nika_tui.domain import protocol_requests as req
from nika_tui.domain.memory import Layer, Status
from nika_tui.domain.ports import PointFilter
from nika_tui.engine.context import EngineContext
from nika_tui.engine.history import earlier_snapshots, history
from nika_tui.engine.recall import recall
from nika_tui.engine.review import Decision, list_items, resolve
from nika_tui.errors import ValidationFailed
from nika_tui.services.config_store import list_tenant_ids


def recall_op(ctx: EngineContext, r: req.RecallRequest) -> rep.RecallReply:
    return rep.RecallReply(recall(ctx, r.query))


def history_op(ctx: EngineContext, r: req.HistoryRequest) -> rep.HistoryReply:
    records = history(ctx, r.tenant_id, r.memory_id)
    return rep.HistoryReply(
        [rec.model_dump(mode="json") for rec in records],
        earlier_snapshots(ctx, r.tenant_id, records),
    )


def review_list_op(ctx: EngineContext, r: req.ReviewListRequest) -> rep.ReviewListReply:
    ctx.tenant(r.tenant_id)
    items = list_items(ctx.redis, r.tenant_id, bool(r.include_resolved))
    return rep.ReviewListReply([i.model_dump(mode="json") for i in items])


def decision_of(raw: str) -> Decision:
    """The review decision named ``raw``.

    Raises:
        ValidationFailed: no such decision.
    """
    try:
        return Decision(raw)
    except ValueError:
        raise ValidationFailed(
            f"invalid decision {raw!r}", "use one of: " + ", ".join(d.value for d in Decision)
        ) from None


def review_resolve_op(ctx: EngineContext, r: req.ReviewResolveRequest) -> rep.ReviewResolveReply:
    decision = decision_of(r.decision)
    item = resolve(ctx, r.tenant_id, r.id, decision, r.note or "")
    return rep.ReviewResolveReply(item.model_dump(mode="json"))


def stats_op(ctx: EngineContext, r: req.StatsRequest) -> rep.StatsReply:
    tenants = [r.tenant_id] if r.tenant_id else list_tenant_ids(ctx.settings.roots)
    out: dict[str, Any] = {}
    for tenant_id in tenants:
        ctx.tenant(tenant_id)
        out[tenant_id] = {
            layer.value: {
                status.value: ctx.vectors.count(
                    tenant_id, layer, PointFilter(equals={"status": status.value})
                )
                for status in Status
            }
            for layer in Layer
        }
    return rep.StatsReply(out)
