"""The debt audit's strategy A triggers → a fresh start, as ``auto_actions.compress`` allows.

When the audit suggests strategy A (a trigger row in alert and a knowledge repo configured):
``autonomous`` runs :func:`nika_tui.engine.reset.reset`; ``escalate`` queues one
``compress.reset`` confirmation (approving it runs the same reset through the service);
``off`` only reports it.

``autonomous`` is throttled: a reset is a full snapshot plus a new generation, so a trigger that
stays in alert must not rerun it at every scheduled audit. At most one autonomous reset per
``reset_cooldown_days``; and when a trigger that caused one is still in alert at a later audit
(or the reset failed), the reset did not help, so the next step is a person's (a confirmation),
never another automatic reset. The first audit without a strategy A suggestion clears the record.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from nika_tui.domain.tenant import AutoMode
from nika_tui.engine.context import EngineContext
from nika_tui.errors import NikaError
from nika_tui.services import redis_keys
from nika_tui.services.confirmation_queue import pending_confirmation, queue_confirmation

KIND = "compress.reset"


def strategy_a_indicators(strategies: Sequence[dict[str, object]]) -> list[str]:
    """Indicators of the audit's suggestions for which the tenant has strategy A."""
    out = []
    for s in strategies:
        available = s.get("available")
        if isinstance(available, list) and "A" in available:
            out.append(str(s.get("indicator", "")))
    return out


def last_autonomous_reset(ctx: EngineContext, tenant_id: str) -> dict[str, Any] | None:
    """The record of the last autonomous reset still unresolved, or None."""
    raw = ctx.redis.get(redis_keys.autonomous_reset(tenant_id))
    return None if raw is None else dict(json.loads(str(raw)))


def _escalate(
    ctx: EngineContext, tenant_id: str, indicators: list[str], why: str, now: datetime
) -> str:
    """Queue (once) the ``compress.reset`` confirmation; its id."""
    item = pending_confirmation(ctx.redis, tenant_id, KIND)
    if item is None:
        item = queue_confirmation(
            ctx.redis, tenant_id, KIND,
            "strategy A: compress into the knowledge repo and start a fresh store",
            why or f"triggers in alert: {', '.join(indicators)}", now,
        )  # fmt: skip
        ctx.bus(tenant_id).append(
            "confirmation.requested", {"id": item["id"], "kind": KIND}, now=now
        )
    return str(item["id"])


def _autonomous(
    ctx: EngineContext, tenant_id: str, indicators: list[str], entry: dict[str, Any], now: datetime
) -> None:
    """Reset, unless the cooldown or an unhelpful previous reset says otherwise."""
    last = last_autonomous_reset(ctx, tenant_id)
    if last is not None:
        still = sorted(set(indicators) & set(last.get("indicators", [])))
        if still or "error" in last:
            why = (
                f"the autonomous reset at {last['at']} failed: {last['error']}"
                if "error" in last
                else f"the autonomous reset at {last['at']} left {', '.join(still)} in alert"
            )
            entry["decision"] = "confirm"
            entry["escalated"] = why
            entry["confirmation_id"] = _escalate(ctx, tenant_id, indicators, why, now)
            return
        cooldown = timedelta(days=ctx.tenant(tenant_id).reset_cooldown_days)
        until = datetime.fromisoformat(str(last["at"])) + cooldown
        if now < until:
            entry["decision"] = "report"
            entry["skipped"] = (
                f"cooldown: one autonomous reset per {cooldown.days} days "
                f"(reset_cooldown_days); next after {until.isoformat()}"
            )
            return
    from nika_tui.engine.reset import reset

    entry["decision"] = "apply"
    record: dict[str, Any] = {"at": now.isoformat(), "indicators": indicators}

    def summary(outcome: dict[str, Any] | NikaError) -> dict[str, Any]:
        if isinstance(outcome, NikaError):
            record["error"] = outcome.message
            result = {"done": False, "error": outcome.message, "hint": outcome.hint}
        else:
            record["generation"] = outcome["generation"]
            result = {k: outcome[k] for k in ("generation", "live_points_before",
                                              "live_points_after")}  # fmt: skip
        ctx.redis.set(redis_keys.autonomous_reset(tenant_id), json.dumps(record))
        return result

    def ended(outcome: dict[str, Any] | NikaError) -> None:
        summary(outcome)

    if ctx.start_reset is not None:
        # The service: the tenant is held and the reset runs beside the other tenants' writes;
        # its outcome is recorded when it ends (a failure escalates at the next audit).
        try:
            ctx.start_reset(tenant_id, ended)
        except NikaError as exc:  # another reset is running: try again at the next audit
            entry["decision"] = "report"
            entry["skipped"] = exc.message
            return
        ctx.redis.set(redis_keys.autonomous_reset(tenant_id), json.dumps(record))
        entry["result"] = {"started": True}
        return
    try:
        entry["result"] = summary(reset(ctx, tenant_id))
    except NikaError as exc:
        entry["result"] = summary(exc)


def decide_reset(
    ctx: EngineContext, tenant_id: str, strategies: Sequence[dict[str, object]]
) -> dict[str, Any] | None:
    """Act on the audit's strategy A suggestions; None when there is none.

    Args:
        ctx: Engine context.
        tenant_id: The tenant.
        strategies: The audit report's strategy suggestions.

    Returns:
        The action entry (``decision`` apply / confirm / report, with ``result``,
        ``confirmation_id``, ``escalated`` or ``skipped``), or None without a suggestion.
    """
    indicators = strategy_a_indicators(strategies)
    if not indicators:
        # Every trigger is under its threshold: a past autonomous reset did its job.
        ctx.redis.delete(redis_keys.autonomous_reset(tenant_id))
        return None
    mode = ctx.tenant(tenant_id).auto_actions.compress
    entry: dict[str, Any] = {
        "action": KIND,
        "metrics": indicators,
        "governed_by": "auto_actions.compress",
        "mode": mode.value,
    }
    now = ctx.clock()
    if mode is AutoMode.AUTONOMOUS:
        _autonomous(ctx, tenant_id, indicators, entry, now)
    elif mode is AutoMode.ESCALATE:
        entry["decision"] = "confirm"
        entry["confirmation_id"] = _escalate(ctx, tenant_id, indicators, "", now)
    else:
        entry["decision"] = "report"
    return entry
