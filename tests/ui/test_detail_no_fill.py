"""Tenant detail of a tenant whose kernel never reported its context fill (issue 17).

"No data" instead of a bar: no percentage, no filled cells, no chart. And a tenant with a
current reading but no history says so under its bar, instead of "no sample recorded".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from nika_tui.dashboard.fixture_source import DEMO_SNAPSHOT, FixtureSource
from nika_tui.ui.app import NikaDashboard
from tests.ui.conftest import SIZE
from tests.ui.pilot_helpers import ready, run, screen_is, wait_for

Build = Callable[..., NikaDashboard]


def _demo(without_fill_of: str | None = None) -> FixtureSource:
    data: dict[str, Any] = yaml.safe_load(DEMO_SNAPSHOT.read_text(encoding="utf-8"))
    for tenant in data["tenants"]:
        if tenant["tenant_id"] == without_fill_of:
            tenant["wm"] = {}  # exited before its hooks reported any fill
    return FixtureSource(data)


def _open_delta(build_app: Build, source: FixtureSource, check: Callable[[Any], None]) -> None:
    async def scenario() -> None:
        async with build_app(source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            await pilot.press("o", "down")  # by tenant: acme, beta, delta…
            await wait_for(pilot, lambda: app.selected_tenant == "delta", "delta selected")
            await pilot.press("enter")
            await screen_is(pilot, "TenantDetailScreen")
            bar = app.screen.query_one("#detail-fill")
            await wait_for(pilot, lambda: str(bar.render()).strip() != "", "the fill bar drawn")
            check(app)

    run(scenario())


def test_detail_without_a_fill_sample_says_no_data_and_no_percentage(build_app: Build) -> None:
    def check(app: Any) -> None:
        bar = str(app.screen.query_one("#detail-fill").render())
        assert "no data" in bar
        assert "%" not in bar and "█" not in bar
        chart = app.screen.query_one("#fill-history")
        assert not chart.has_data
        assert "no fill sample recorded yet" in str(chart.render())

    _open_delta(build_app, _demo(without_fill_of="delta"), check)


def test_a_reading_without_history_is_not_called_no_sample(build_app: Build) -> None:
    def check(app: Any) -> None:
        bar = str(app.screen.query_one("#detail-fill").render())
        assert "8" in bar and "%" in bar
        chart = str(app.screen.query_one("#fill-history").render())
        assert "no fill sample recorded yet" not in chart
        assert "only the current reading" in chart

    _open_delta(build_app, _demo(), check)
