"""The tenant detail shows the recall parameters in force and the last tuning's gain ± noise."""

from __future__ import annotations

from datetime import UTC, datetime

import redis

from nika_tui.dashboard.redis_source import RedisDashboardSource
from nika_tui.domain.recall_params import RecallParams
from nika_tui.domain.tenant import TenantConfig
from nika_tui.services.config_store import save_tenant
from nika_tui.services.recall_params import adopt_params, record_tuning
from nika_tui.settings import Settings

NOW = datetime(2026, 12, 3, 12, tzinfo=UTC)


def test_detail_line_before_and_after_a_tuning(
    isolated_env: dict[str, str], redis_url: str, redis_client: redis.Redis
) -> None:
    env = {**isolated_env, "REDIS_URL": redis_url}
    save_tenant(TenantConfig(tenant_id="acme", display_name="Acme"), Settings.from_env(env).roots)
    src = RedisDashboardSource(env, rpc=lambda *a: {})
    assert src.tenant_detail("acme", NOW).recall_params == ""  # never tuned: nothing to say
    adopt_params(redis_client, "acme", RecallParams(palace_floor=0.32), NOW.isoformat())
    record_tuning(
        redis_client,
        "acme",
        {"at": NOW.isoformat(), "gain": 0.2, "noise_sd": 0.0718, "action": "adopted"},
    )
    line = src.tenant_detail("acme", NOW).recall_params
    assert line.startswith("tuned floor 0.32 dense 0.0")
    assert "gain +0.200 ± 0.072 (adopted)" in line
