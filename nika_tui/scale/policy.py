"""What ``auto_actions.scale`` lets a plan do: off → report, escalate → ask, autonomous → apply.

An escalated plan becomes one confirmation (kind ``scale.apply``) whose title carries the
provider, the instance type and the estimated cost per hour; approving it with ``nika confirm``
applies exactly that plan id (so approving twice cannot create two workers).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import redis

from nika_tui.domain.tenant import AutoMode, TenantConfig
from nika_tui.scale.actions import AdapterFactory, apply_plan
from nika_tui.scale.planner import Plan, PlanKind
from nika_tui.scale.state import OPEN, ScaleState
from nika_tui.services.bus import open_bus
from nika_tui.services.confirmation_queue import queue_confirmation
from nika_tui.settings import Settings

CONFIRMATION_KIND = "scale.apply"


def act(
    plan: Plan,
    config: TenantConfig,
    state: ScaleState,
    factory: AdapterFactory,
    client: redis.Redis | None,
    now: datetime,
    settings: Settings,
) -> dict[str, Any]:
    """Record ``plan`` and do what the tenant's ``auto_actions.scale`` allows.

    Returns:
        ``{"plan": ..., "action": "none|reported|confirmation|applied|draining", ...}``.
    """
    out: dict[str, Any] = {"plan": plan.as_dict()}
    if plan.kind in (PlanKind.NONE, PlanKind.UNAVAILABLE):
        return {**out, "action": "none"}
    mode = config.auto_actions.scale
    bus = open_bus(config.tenant_id, settings.roots)
    if mode is AutoMode.OFF:
        state.save_plan(plan, "reported")
        bus.append("scale.plan", {"plan_id": plan.plan_id, "summary": plan.summary()}, now=now)
        return {**out, "action": "reported"}
    other = state.save_plan_unless_open(plan, "pending")
    if other is not None:  # a person's plan (or another leader's) got there first
        return {**out, "action": "none", "open_plan": other["plan_id"]}
    if mode is AutoMode.ESCALATE:
        if client is None:
            return {**out, "action": "pending"}
        item = queue_confirmation(
            client,
            config.tenant_id,
            CONFIRMATION_KIND,
            plan.summary(),
            f"plan {plan.plan_id}: " + "; ".join(plan.reasons),
            now,
            {"plan_id": plan.plan_id},  # written with it: never a confirmation without its plan
        )
        return {**out, "action": "confirmation", "confirmation_id": item["id"]}
    # Never waits for a drain: this runs in the service loop (decision 456).
    record = apply_plan(plan.plan_id, config, state, factory, now, settings, wait=False)
    if record["status"] == "draining":
        bus.append("scale.draining", {"plan_id": plan.plan_id, "summary": plan.summary()}, now=now)
        return {**out, "action": "draining", "record": record}
    bus.append("scale.applied", {"plan_id": plan.plan_id, "summary": plan.summary()}, now=now)
    return {**out, "action": "applied", "record": record}


def open_plans(state: ScaleState, tenant_id: str) -> list[dict[str, Any]]:
    """The tenant's plans still waiting or in flight (no new plan is made beside one)."""
    plans = state.snapshot()["plans"].values()
    return [p for p in plans if p["tenant_id"] == tenant_id and p["status"] in OPEN]
