"""Approving a ``scale.apply`` confirmation: apply that plan id (once) with the tenant's keys."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import redis

from nika_tui.scale.actions import apply_plan, default_factory
from nika_tui.scale.state import ScaleState
from nika_tui.services.config_store import load_tenant
from nika_tui.settings import Settings


def approve_scale(
    tenant_id: str,
    plan_id: str,
    settings: Settings,
    now: datetime,
    client: redis.Redis | None = None,
    secrets_env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Apply the confirmed plan (raises ``ScaleError`` if it was applied already); ``client``:
    the shared Redis, where the plans are (decision 380); ``secrets_env``: where the
    provider's keys are read (``os.environ`` when ``None``)."""
    config = load_tenant(tenant_id, settings.roots)
    state = ScaleState(settings.roots, client)
    return apply_plan(plan_id, config, state, default_factory(secrets_env), now, settings)
