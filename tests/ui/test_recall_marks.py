"""The recall screen's keys label a hit useful / not useful for `nika tune recall`."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import Static

from nika_tui.dashboard.fixture_source import FixtureSource
from nika_tui.dashboard.redis_source import RedisDashboardSource
from nika_tui.domain.tenant import TenantConfig
from nika_tui.settings import Settings
from nika_tui.tuning.relevance import load_set
from nika_tui.ui.app import NikaDashboard
from tests.ui.conftest import SIZE
from tests.ui.pilot_helpers import ready, run, screen_is, wait_for

Build = Callable[..., NikaDashboard]


def _hits(app: NikaDashboard) -> str:
    return str(app.screen.query_one("#recall-hits", Static).render())


def test_keys_pick_a_hit_and_mark_it(build_app: Build, fixture_source: FixtureSource) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            app.selected_tenant = "acme"
            await pilot.press("slash")
            await screen_is(pilot, "RecallScreen")
            await pilot.press("ctrl+y")  # nothing recalled yet: nothing marked
            await pilot.press(*"vat rounding", "enter")
            await wait_for(pilot, lambda: "▶ " in _hits(app) and "m-881" in _hits(app), "hit")
            await pilot.press("ctrl+n", "ctrl+b", "ctrl+y")  # keys work while typing
            await wait_for(pilot, lambda: len(fixture_source.actions) == 1, "the useful mark")
            await pilot.press("ctrl+g")
            await wait_for(pilot, lambda: len(fixture_source.actions) == 2, "the other mark")
            view = app.screen.view  # type: ignore[attr-defined]
            first = view.hits[0].id
            assert fixture_source.actions == [
                ("mark", "acme", first, "useful"),
                ("mark", "acme", first, "not"),
            ]

    run(scenario())


def test_the_redis_source_writes_the_relevance_set(
    make_tenant: Callable[..., TenantConfig],
) -> None:
    make_tenant("acme")
    source = RedisDashboardSource(Settings.from_env())
    # Memory ids are UUIDs; a mark of anything else is refused (decision 423).
    useful, not_useful = (
        "0f3c2a9e-4b1d-4c2e-9a7f-1d2e3f4a5b6c",
        "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
    )
    assert "marked useful" in source.mark_recall("acme", "vat rounding", useful, True)
    source.mark_recall("acme", "vat rounding", not_useful, False)
    [judged] = load_set("acme")
    assert judged.useful == frozenset({useful})
    assert judged.not_useful == frozenset({not_useful})
