"""RPC operations of the memory service: ``name → handler(ctx, body) -> dict``.

Reads (recall, history, lists, stats) and person-made writes (review decisions) reach the
single-writer service as RPC requests on ``RPC_STREAM``. Other engine modules add ops with
``@op("name")``; :mod:`nika_tui.engine.ops_registry` imports them all at service start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from nika_tui.domain.envelope import explain_validation_error
from nika_tui.domain.memory import Layer, Status
from nika_tui.domain.ports import PointFilter
from nika_tui.domain.requests import RecallQuery
from nika_tui.engine.context import EngineContext
from nika_tui.engine.history import history
from nika_tui.engine.recall import recall
from nika_tui.engine.review import Decision, list_items, resolve
from nika_tui.errors import ValidationFailed
from nika_tui.services.config_store import list_tenant_ids

OpHandler = Callable[[EngineContext, dict[str, Any]], dict[str, Any]]

OPS: dict[str, OpHandler] = {}
"""Every registered operation, by name."""


def op(name: str) -> Callable[[OpHandler], OpHandler]:
    """Register ``fn`` as the handler of RPC operation ``name``."""

    def register(fn: OpHandler) -> OpHandler:
        if name in OPS and OPS[name] is not fn:
            raise ValueError(f"RPC op {name!r} registered twice")
        OPS[name] = fn
        return fn

    return register


def _str(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise ValidationFailed(f"missing {key!r} in the request", "pass it (a non-empty string)")
    return value


@op("recall")
def _recall(ctx: EngineContext, body: dict[str, Any]) -> dict[str, Any]:
    try:
        q = RecallQuery.model_validate(body)
    except ValidationError as exc:
        raise ValidationFailed(
            f"invalid recall: {explain_validation_error(exc)}", "fix the query"
        ) from exc
    return recall(ctx, q).model_dump(mode="json")


@op("history")
def _history(ctx: EngineContext, body: dict[str, Any]) -> dict[str, Any]:
    records = history(ctx, _str(body, "tenant_id"), _str(body, "memory_id"))
    return {"records": [r.model_dump(mode="json") for r in records]}


@op("review.list")
def _review_list(ctx: EngineContext, body: dict[str, Any]) -> dict[str, Any]:
    tenant_id = _str(body, "tenant_id")
    ctx.tenant(tenant_id)
    items = list_items(ctx.redis, tenant_id, bool(body.get("include_resolved", False)))
    return {"items": [i.model_dump(mode="json") for i in items]}


@op("review.resolve")
def _review_resolve(ctx: EngineContext, body: dict[str, Any]) -> dict[str, Any]:
    raw = _str(body, "decision")
    try:
        decision = Decision(raw)
    except ValueError:
        raise ValidationFailed(
            f"invalid decision {raw!r}", "use one of: " + ", ".join(d.value for d in Decision)
        ) from None
    item = resolve(
        ctx, _str(body, "tenant_id"), _str(body, "id"), decision, str(body.get("note", ""))
    )
    return {"item": item.model_dump(mode="json")}


@op("stats")
def _stats(ctx: EngineContext, body: dict[str, Any]) -> dict[str, Any]:
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


@op("ping")
def _ping(ctx: EngineContext, body: dict[str, Any]) -> dict[str, Any]:
    import os

    return {"pid": os.getpid(), "embedder": ctx.embedder.name, "ops": sorted(OPS)}
