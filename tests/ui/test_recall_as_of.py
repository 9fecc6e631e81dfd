"""The recall screen's ``as of`` box, on the fixture source and on the real service."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from textual.widgets import Input, Static

from nika_tui.dashboard.fixture_source import FixtureSource
from nika_tui.dashboard.redis_source import RedisDashboardSource
from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.settings import Settings
from nika_tui.ui.app import NikaDashboard
from tests.plugins.memory import RunningService
from tests.ui.conftest import SIZE
from tests.ui.pilot_helpers import ready, run, screen_is, wait_for

Build = Callable[..., NikaDashboard]


def _hits(app: NikaDashboard) -> str:
    return str(app.screen.query_one("#recall-hits", Static).render())


def test_as_of_box_filters_by_valid_time_and_explains_a_bad_date(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            app.selected_tenant = "acme"
            await pilot.press("slash")
            await screen_is(pilot, "RecallScreen")
            screen = app.screen
            screen.query_one("#recall-query", Input).value = "vat rounding"
            # The canned VAT decision is from 2026-12-01: not yet true on 2026-11-01.
            screen.query_one("#recall-as-of", Input).focus()
            await pilot.press(*"2026-11-01", "enter")
            await wait_for(pilot, lambda: "no memory for vat rounding" in _hits(app), "PALACE")
            screen.query_one("#recall-as-of", Input).value = "2026-12-02"
            await pilot.press("enter")
            await wait_for(pilot, lambda: "m-881" in _hits(app), "the hit as of Dec 2")
            screen.query_one("#recall-as-of", Input).value = "last winter"
            await pilot.press("enter")
            await wait_for(pilot, lambda: "as of: 'last winter' is not a date" in _hits(app), "err")

    run(scenario())


@pytest.mark.embedder
@pytest.mark.slow
def test_dashboard_source_recall_as_of_on_the_service(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    client = running_service.client
    for text, month in (
        ("The staging server is staging-1.acme.internal", 3),
        ("The staging server moved to staging-2.acme.internal", 6),
    ):
        meta = NikaMeta(timestamp=datetime(2026, month, 1, tzinfo=UTC), project_id="web")
        req = RememberRequest(tenant_id="acme", text=text, meta=meta)
        client.wait_ingested("acme", client.remember(req), timeout=60)
    src = RedisDashboardSource(Settings.from_env())
    april = src.recall("acme", "which staging server?", datetime(2026, 4, 1, tzinfo=UTC))
    now = src.recall("acme", "which staging server?")
    assert [h.text for h in april.hits] == ["The staging server is staging-1.acme.internal"]
    assert [h.text for h in now.hits] == ["The staging server moved to staging-2.acme.internal"]
