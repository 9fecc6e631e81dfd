"""The ``debt_history`` stream read back: past audits, a tenant's last audit, who is due."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from nika_tui.domain import protocol_replies as rep
from nika_tui.domain import protocol_requests as req
from nika_tui.engine.audit.inventory import parse_ts
from nika_tui.engine.context import EngineContext
from nika_tui.services import redis_keys
from nika_tui.services.config_store import list_tenant_ids

HISTORY_MAXLEN = 2000


def audit_history(ctx: EngineContext, tenant_id: str, count: int = 100) -> list[dict[str, Any]]:
    """The last ``count`` audit runs, oldest first (for sparklines)."""
    entries: list[tuple[str, dict[str, str]]] = ctx.redis.xrevrange(  # type: ignore[assignment]
        redis_keys.debt_history(tenant_id), count=count
    )
    out: list[dict[str, Any]] = []
    for _id, fields in reversed(entries):
        try:
            out.append(json.loads(fields.get("report", "{}")))
        except json.JSONDecodeError:
            continue
    return out


def last_audit_at(ctx: EngineContext, tenant_id: str) -> float | None:
    """Epoch seconds of the tenant's last audit, if any (from ``debt_history``)."""
    entries: list[tuple[str, dict[str, str]]] = ctx.redis.xrevrange(  # type: ignore[assignment]
        redis_keys.debt_history(tenant_id), count=1
    )
    if not entries:
        return None
    return parse_ts(entries[0][1].get("at"))


def due_tenants(ctx: EngineContext) -> Iterator[str]:
    """Tenants whose last audit is older than the interval."""
    interval = ctx.settings.audit_interval_s
    now = ctx.clock().timestamp()
    for tenant_id in list_tenant_ids(ctx.settings.roots):
        last = last_audit_at(ctx, tenant_id)
        if last is None or now - last >= interval:
            yield tenant_id


def requested_tenants(ctx: EngineContext, tenant_id: str | None) -> list[str]:
    """``[tenant_id]``, or every configured tenant when it is None or empty."""
    return [tenant_id] if tenant_id else list_tenant_ids(ctx.settings.roots)


def audit_history_op(ctx: EngineContext, r: req.AuditHistoryRequest) -> rep.AuditHistoryReply:
    count = 100 if r.count is None else r.count
    return rep.AuditHistoryReply(
        {t: audit_history(ctx, t, count) for t in requested_tenants(ctx, r.tenant_id)}
    )
