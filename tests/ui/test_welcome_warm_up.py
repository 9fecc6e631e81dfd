"""Under the welcome screen the dashboard does not load the kernel manager (issue 17).

That import ran in the UI thread right after the first frame (0.2-0.6 s on the loaded 2-core
box) and held the welcome's "Set up a tenant" button: the wizard started 0.5-1.0 s after Enter.
No kernel can be reached from the welcome screen, so the overview loads it when it is shown.
"""

from __future__ import annotations

from collections.abc import Callable

from nika_tui.dashboard.fixture_source import FixtureSource
from nika_tui.ui.app import NikaDashboard
from tests.ui.conftest import SIZE
from tests.ui.pilot_helpers import run, screen_is, wait_for

Build = Callable[..., NikaDashboard]


def test_the_kernel_manager_waits_for_the_overview(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source, show_welcome=True).run_test(size=SIZE) as pilot:
            app = pilot.app
            await screen_is(pilot, "WelcomeScreen")
            await wait_for(pilot, lambda: app.snapshot is not None, "the first snapshot")
            for _ in range(5):  # frames after the first: the overview below has had its turn
                await pilot.pause()
            assert not app.warmed_up
            await pilot.click("#preview")
            await screen_is(pilot, "OverviewScreen")
            await wait_for(pilot, lambda: app.warmed_up, "loaded once the overview is shown")

    run(scenario())


def test_without_the_welcome_it_loads_after_the_first_frame(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = pilot.app
            await screen_is(pilot, "OverviewScreen")
            await wait_for(pilot, lambda: app.warmed_up, "loaded after the first frame")

    run(scenario())
