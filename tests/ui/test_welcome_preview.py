"""The welcome's "Preview with sample data" button: the PREVIEW banner, actions refused (issue 17).

The same promise as ``nika dashboard --offline-ui`` (tests/ui/test_keys.py), reached the way a
first-time person reaches it: from the welcome screen, after the app started on another source.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import Static

from nika_tui.dashboard.fixture_source import FixtureSource
from nika_tui.ui.app import NikaDashboard
from tests.ui.conftest import SIZE
from tests.ui.pilot_helpers import notes, run, screen_is, wait_for

Build = Callable[..., NikaDashboard]


def test_welcome_preview_button_shows_the_banner_and_refuses_actions(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source, show_welcome=True).run_test(size=SIZE) as pilot:
            app = pilot.app
            assert isinstance(app, NikaDashboard)
            await screen_is(pilot, "WelcomeScreen")
            assert not app.preview
            await pilot.click("#preview")
            await screen_is(pilot, "OverviewScreen")
            await wait_for(pilot, lambda: app.snapshot is not None, "the sample rows")
            preview = app.source
            assert isinstance(preview, FixtureSource) and preview is not fixture_source
            banner = app.screen.query_one(".preview-banner", Static)
            await wait_for(pilot, lambda: banner.display, "the banner shown")
            assert "PREVIEW" in str(banner.render())
            await pilot.press("s")
            await wait_for(pilot, lambda: any("preview" in n for n in notes(app)), "refused")
            assert preview.actions == [] and fixture_source.actions == []
            await pilot.press("b")
            await screen_is(pilot, "BusScreen")
            assert app.screen.query_one(".preview-banner", Static).display

    run(scenario())
