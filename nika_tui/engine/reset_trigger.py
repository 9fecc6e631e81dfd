"""The debt audit's strategy A triggers → a fresh start, as ``auto_actions.compress`` allows.

When the audit suggests strategy A (a trigger row in alert and a knowledge repo configured):
``autonomous`` runs :func:`nika_tui.engine.reset.reset`; ``escalate`` queues one
``compress.reset`` confirmation (approving it runs the same reset through the service);
``off`` only reports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nika_tui.domain.tenant import AutoMode
from nika_tui.engine.context import EngineContext
from nika_tui.errors import NikaError
from nika_tui.services.kernel_store import pending_confirmation, queue_confirmation

KIND = "compress.reset"


def strategy_a_indicators(strategies: Sequence[dict[str, object]]) -> list[str]:
    """Indicators of the audit's suggestions for which the tenant has strategy A."""
    out = []
    for s in strategies:
        available = s.get("available")
        if isinstance(available, list) and "A" in available:
            out.append(str(s.get("indicator", "")))
    return out


def decide_reset(
    ctx: EngineContext, tenant_id: str, strategies: Sequence[dict[str, object]]
) -> dict[str, Any] | None:
    """Act on the audit's strategy A suggestions; None when there is none."""
    indicators = strategy_a_indicators(strategies)
    if not indicators:
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
        from nika_tui.engine.reset import reset

        entry["decision"] = "apply"
        try:
            result = reset(ctx, tenant_id)
            entry["result"] = {k: result[k] for k in ("generation", "live_points_before",
                                                      "live_points_after")}  # fmt: skip
        except NikaError as exc:
            entry["result"] = {"done": False, "error": exc.message, "hint": exc.hint}
    elif mode is AutoMode.ESCALATE:
        entry["decision"] = "confirm"
        item = pending_confirmation(ctx.redis, tenant_id, KIND)
        if item is None:
            item = queue_confirmation(
                ctx.redis, tenant_id, KIND,
                "strategy A: compress into the knowledge repo and start a fresh store",
                f"triggers in alert: {', '.join(indicators)}", now,
            )  # fmt: skip
            ctx.bus(tenant_id).append(
                "confirmation.requested", {"id": item["id"], "kind": KIND}, now=now
            )
        entry["confirmation_id"] = item["id"]
    else:
        entry["decision"] = "report"
    return entry
