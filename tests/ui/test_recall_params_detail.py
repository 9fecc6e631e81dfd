"""The tenant detail shows the recall parameters in force and the last tuning's gain ± noise."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import redis
from textual.widgets import Static

from nika_tui.dashboard.redis_source import RedisDashboardSource
from nika_tui.domain.recall_params import DEFAULT_PALACE_FLOOR, RecallParams
from nika_tui.domain.tenant import AutoMode, TenantConfig
from nika_tui.engine.context import EngineContext
from nika_tui.services.config_store import save_tenant
from nika_tui.services.recall_params import adopt_params, record_tuning
from nika_tui.settings import Settings
from nika_tui.tuning.tuner import tune
from nika_tui.ui.app import make_app
from tests.engine.tuning_tenant import constructed_tenant, set_tune_mode
from tests.ui.conftest import SIZE
from tests.ui.pilot_helpers import ready, run, screen_is, wait_for

NOW = datetime(2026, 12, 3, 12, tzinfo=UTC)
DEFAULTS = RecallParams()


def test_detail_line_before_and_after_a_tuning(
    isolated_env: dict[str, str], redis_url: str, redis_client: redis.Redis
) -> None:
    env = {**isolated_env, "REDIS_URL": redis_url}
    save_tenant(TenantConfig(tenant_id="acme", display_name="Acme"), Settings.from_env(env).roots)
    src = RedisDashboardSource(Settings.from_env(env), rpc=lambda *a: {})
    never = src.tenant_detail("acme", NOW).recall_params
    assert never == (
        f"defaults, not tuned yet: floor {DEFAULT_PALACE_FLOOR:.2f} dense "
        f"{DEFAULTS.dense_weight:.1f} recency {DEFAULTS.recency_weight:.1f}"
        f"/{DEFAULTS.recency_tau_days:.0f}d depth ×{DEFAULTS.depth_factor}"
        + (f" ef {DEFAULTS.hnsw_ef}" if DEFAULTS.hnsw_ef else "")
    )
    adopt_params(redis_client, "acme", RecallParams(palace_floor=0.32), NOW.isoformat())
    record_tuning(
        redis_client,
        "acme",
        {"at": NOW.isoformat(), "gain": 0.2, "noise_sd": 0.0718, "action": "adopted"},
    )
    line = src.tenant_detail("acme", NOW).recall_params
    assert line.startswith("tuned floor 0.32 dense 0.0")
    assert "gain +0.200 ± 0.072 (adopted)" in line


def test_detail_screen_shows_the_defaults_of_a_never_tuned_tenant(
    isolated_env: dict[str, str], redis_url: str, tmp_path: Path
) -> None:
    env = {**isolated_env, "REDIS_URL": redis_url}
    save_tenant(TenantConfig(tenant_id="acme", display_name="Acme"), Settings.from_env(env).roots)
    app = make_app(
        Settings.from_env(env),
        source=RedisDashboardSource(Settings.from_env(env)),
        clock=lambda: NOW,
        show_welcome=False,
        settings_file=tmp_path / "ui.yaml",
    )

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await pilot.press("enter")
            await screen_is(pilot, "TenantDetailScreen")

            def shown() -> str:
                return str(app.screen.query_one("#strategies", Static).render())

            await wait_for(pilot, lambda: "recall:" in shown(), "the recall parameters line")
            assert f"recall: defaults, not tuned yet: floor {DEFAULT_PALACE_FLOOR:.2f}" in shown()

    run(scenario())


def test_detail_screen_after_a_real_tuning_shows_the_gain_adopted(
    debt_ctx: EngineContext, isolated_env: dict[str, str], redis_url: str, tmp_path: Path
) -> None:
    # A real tuning on a constructed tenant (tests/engine/tuning_tenant.py): answers at cosine
    # 0.32 under the default floor, so a lower floor is found and adopted (autonomous).
    labels = constructed_tenant(debt_ctx, relevant_cos=0.32)
    set_tune_mode(AutoMode.AUTONOMOUS)
    out = tune(debt_ctx, "acme", trials=20, seed=1, judged=labels)
    assert out["action"] == "adopted"
    floor = out["best"]["palace_floor"]
    env = {**isolated_env, "REDIS_URL": redis_url}
    app = make_app(
        Settings.from_env(env),
        source=RedisDashboardSource(Settings.from_env(env)),
        clock=lambda: NOW,
        show_welcome=False,
        settings_file=tmp_path / "ui.yaml",
    )

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await pilot.press("enter")
            await screen_is(pilot, "TenantDetailScreen")

            def shown() -> str:
                return str(app.screen.query_one("#strategies", Static).render())

            await wait_for(pilot, lambda: "recall:" in shown(), "the recall parameters line")
            text = " ".join(shown().split())  # the line may wrap in the panel
            assert f"recall: tuned floor {floor:.2f}" in text
            assert f"gain {out['gain']:+.3f} ± {out['noise_sd']:.3f} (adopted)" in text

    run(scenario())
