"""The memory ops of the RPC table: recall, history, the review list and decisions, stats.

Reads (recall, history, lists, stats) and person-made writes (review decisions) reach the
single-writer service as RPC requests on ``RPC_STREAM``; :mod:`nika_tui.engine.server.rpc`
maps each :class:`~nika_tui.domain.protocol.Op` to its handler, these and other modules'.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from nika_tui.domain.envelope import explain_validation_error
from nika_tui.domain.memory import Layer, Status
from nika_tui.domain.ports import PointFilter
from nika_tui.domain.protocol import body_str
from nika_tui.domain.requests import RecallQuery
from nika_tui.engine.context import EngineContext
from nika_tui.engine.history import history
from nika_tui.engine.recall import recall
from nika_tui.engine.review import Decision, list_items, resolve
from nika_tui.errors import ValidationFailed
from nika_tui.services.config_store import list_tenant_ids


def recall_op(ctx: EngineContext, body: dict[str, Any]) -> dict[str, Any]:
    try:
        q = RecallQuery.model_validate(body)
    except ValidationError as exc:
        raise ValidationFailed(
            f"invalid recall: {explain_validation_error(exc)}", "fix the query"
        ) from exc
    return recall(ctx, q).model_dump(mode="json")


def history_op(ctx: EngineContext, body: dict[str, Any]) -> dict[str, Any]:
    records = history(ctx, body_str(body, "tenant_id"), body_str(body, "memory_id"))
    return {"records": [r.model_dump(mode="json") for r in records]}


def review_list_op(ctx: EngineContext, body: dict[str, Any]) -> dict[str, Any]:
    tenant_id = body_str(body, "tenant_id")
    ctx.tenant(tenant_id)
    items = list_items(ctx.redis, tenant_id, bool(body.get("include_resolved", False)))
    return {"items": [i.model_dump(mode="json") for i in items]}


def review_resolve_op(ctx: EngineContext, body: dict[str, Any]) -> dict[str, Any]:
    raw = body_str(body, "decision")
    try:
        decision = Decision(raw)
    except ValueError:
        raise ValidationFailed(
            f"invalid decision {raw!r}", "use one of: " + ", ".join(d.value for d in Decision)
        ) from None
    item = resolve(
        ctx, body_str(body, "tenant_id"), body_str(body, "id"), decision, str(body.get("note", ""))
    )
    return {"item": item.model_dump(mode="json")}


def stats_op(ctx: EngineContext, body: dict[str, Any]) -> dict[str, Any]:
    wanted = body.get("tenant_id")
    tenants = [str(wanted)] if wanted else list_tenant_ids(ctx.env)
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
    return {"tenants": out}
