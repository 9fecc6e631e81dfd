"""Approving a ``scale.apply`` confirmation: apply that plan id (once) with the tenant's keys."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from nika_tui.paths import roots
from nika_tui.scale.actions import apply_plan, default_factory
from nika_tui.scale.state import ScaleState
from nika_tui.services.config_store import load_tenant


def approve_scale(
    tenant_id: str, plan_id: str, env: Mapping[str, str] | None, now: datetime
) -> dict[str, Any]:
    """Apply the confirmed plan (raises ``ScaleError`` if it was applied already)."""
    where = roots(env)
    config = load_tenant(tenant_id, where)
    return apply_plan(plan_id, config, ScaleState(where), default_factory(env), now, env)
