"""The overview's Tok·cost column reads the billing counters the hooks keep (issue 18)."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import redis

from nika_tui.billing.collect import collect_transcript
from nika_tui.billing.log import BillingLog
from nika_tui.billing.prices import DEFAULT_PRICES
from nika_tui.billing.report import build_report
from nika_tui.dashboard.redis_source import RedisDashboardSource
from nika_tui.domain.tenant import Quotas, TenantConfig
from nika_tui.services.config_store import save_tenant
from nika_tui.settings import Settings
from nika_tui.ui.screens.overview import usage_text

DATA = Path(__file__).resolve().parents[1] / "data"
NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def test_column_shows_todays_share_of_the_quota_and_cost(
    isolated_env: dict[str, str], redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    save_tenant(
        TenantConfig(
            tenant_id="acme",
            display_name="Acme",
            quotas=Quotas(cpu_percent=50, ram_mb=512, tokens_per_day=200_000),
        )
    )
    transcript = tmp_path / "t.jsonl"
    shutil.copy(DATA / "claude" / "transcript_session.jsonl", transcript)
    collect_transcript("acme", transcript, {}, NOW, redis_client)
    report = build_report("acme", BillingLog("acme").entries(), DEFAULT_PRICES, None)

    row = (
        RedisDashboardSource(Settings.from_env({**isolated_env, "REDIS_URL": redis_url}))
        .snapshot(NOW)
        .row("acme")
    )
    assert row is not None
    assert row.tokens_today == report["total"]["tokens"]
    assert row.tokens_limit == 200_000
    assert row.cost_today is not None
    assert abs(row.cost_today - report["total"]["cost"]) < 1e-6
    pct = round(100 * report["total"]["tokens"] / 200_000)
    assert usage_text(row).plain == f"{pct}% {report['total']['cost']:.2f}"
