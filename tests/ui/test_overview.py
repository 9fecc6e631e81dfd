"""Overview: rows, filters, sort, kernel keys, attach round trip, palette, notifications."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.widgets import DataTable

from nika_tui.dashboard.fixture_source import FixtureSource
from nika_tui.ui.app import NikaDashboard
from tests.ui.conftest import SIZE
from tests.ui.pilot_helpers import notes, ready, run, screen_is, wait_for

Build = Callable[..., NikaDashboard]


def _rows(app: NikaDashboard) -> list[str]:
    table = app.screen.query_one("#tenants", DataTable)
    return [str(table.coordinate_to_cell_key((i, 0)).row_key.value) for i in range(table.row_count)]


def test_one_row_per_tenant_needs_me_first(build_app: Build, fixture_source: FixtureSource) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            await wait_for(pilot, lambda: len(_rows(app)) == 4, "4 rows")
            # beta waits for input, has reviews and an alert: it needs me and comes first.
            assert _rows(app)[0] == "beta"
            assert sorted(_rows(app)) == ["acme", "beta", "delta", "gamma"]

    run(scenario())


def test_filter_by_needs_me_and_state_and_sort(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            await pilot.press("n")
            await wait_for(pilot, lambda: _rows(app) == ["beta"], "needs-me filter")
            await pilot.press("n", "f")  # needs-me off, state filter: working
            await wait_for(pilot, lambda: _rows(app) == ["acme"], "state filter working")
            await pilot.press("f")  # waiting-input
            await wait_for(pilot, lambda: _rows(app) == ["beta"], "state filter waiting-input")
            for _ in range(4):  # idle, exited, error, then back to all states
                await pilot.press("f")
            await pilot.press("o")  # sort by tenant id
            await wait_for(pilot, lambda: _rows(app) == ["acme", "beta", "delta", "gamma"], "sort")

    run(scenario())


def test_spawn_stop_restart_keys_reach_the_source(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            await pilot.press("o", "down")  # by tenant: acme, beta (cursor kept), delta
            await wait_for(pilot, lambda: app.selected_tenant == "delta", "delta selected")
            await pilot.press("s")
            await wait_for(pilot, lambda: ("spawn", "delta") in fixture_source.actions, "spawn")
            # The overview refreshes after the action: delta's kernel is now starting.
            await wait_for(
                pilot,
                lambda: app.snapshot and app.snapshot.row("delta").kernel.state == "starting",  # type: ignore[union-attr]
                "delta starting",
            )
            # x asks first (issue 17): "n" leaves the kernel alone, "y" stops it.
            await pilot.press("x")
            await screen_is(pilot, "AskYesNo")
            await pilot.press("n")
            await screen_is(pilot, "OverviewScreen")
            assert ("stop", "delta") not in fixture_source.actions
            await pilot.press("x")
            await screen_is(pilot, "AskYesNo")
            await pilot.press("y")
            await wait_for(pilot, lambda: ("stop", "delta") in fixture_source.actions, "stop")
            await screen_is(pilot, "OverviewScreen")
            await pilot.press("R")
            await wait_for(pilot, lambda: ("restart", "delta") in fixture_source.actions, "restart")

    run(scenario())


def test_attach_runs_the_argv_and_comes_back(build_app: Build, tmp_path: Path) -> None:
    marker = tmp_path / "attached"
    source = FixtureSource.from_file(attach=["sh", "-c", f"echo attached > {marker}"])

    async def scenario() -> None:
        async with build_app(source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            await pilot.press("a")
            await wait_for(pilot, marker.exists, "the attach command ran")
            await wait_for(pilot, lambda: any("back from" in n for n in notes(app)), "return")
            # The app is still alive and interactive after the round trip.
            await pilot.press("n")
            await wait_for(pilot, lambda: _rows(app) == ["beta"], "keys work after attach")

    run(scenario())
    assert ("attach", "beta") in source.actions


def test_palette_runs_a_per_tenant_action(build_app: Build, fixture_source: FixtureSource) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            await ready(pilot)
            await pilot.press("ctrl+p")
            await screen_is(pilot, "CommandPalette")
            await pilot.press(*"spawn kernel: gamma")
            await pilot.pause(0.3)
            await pilot.press("enter")
            await wait_for(
                pilot, lambda: ("spawn", "gamma") in fixture_source.actions, "palette spawn"
            )

    run(scenario())


def test_palette_opens_a_screen(build_app: Build, fixture_source: FixtureSource) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            await ready(pilot)
            await pilot.press("ctrl+p")
            await screen_is(pilot, "CommandPalette")
            await pilot.press(*"memory debt")
            await pilot.pause(0.3)
            await pilot.press("enter")
            await screen_is(pilot, "DebtScreen")

    run(scenario())


def test_help_screen_opens_and_closes(build_app: Build, fixture_source: FixtureSource) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            await ready(pilot)
            await pilot.press("question_mark")
            await screen_is(pilot, "HelpScreen")
            await pilot.press("escape")
            await screen_is(pilot, "OverviewScreen")

    run(scenario())


def test_notifications_for_waiting_alert_and_queued_decision(build_app: Build) -> None:
    source = FixtureSource.from_file()

    async def scenario() -> None:
        async with build_app(source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            acme = next(t for t in source._data["tenants"] if t["tenant_id"] == "acme")
            beta = next(t for t in source._data["tenants"] if t["tenant_id"] == "beta")
            with source._lock:
                acme["kernel"]["state"] = "waiting-input"
                acme["debt_reports"].append(
                    {
                        "at": "2026-12-02T10:00:00+00:00",
                        "metrics": [
                            {
                                "name": "duplicate_rate",
                                "value": 0.09,
                                "threshold": 0.05,
                                "status": "alert",
                            }
                        ],
                    }
                )
                acme["review"] = list(beta["review"])
            app.request_refresh()
            await wait_for(pilot, lambda: len(notes(app)) >= 3, "three notifications")
            text = " ".join(notes(app))
            assert "acme: the kernel is waiting for input" in text
            assert "acme: duplicate_rate 0.09 crossed into alert" in text
            assert "acme: review rv-2 queued (rules: another entity may be meant" in text

    run(scenario())


def test_theme_choice_is_persisted_0600(
    build_app: Build, fixture_source: FixtureSource, tmp_path: Path
) -> None:
    settings = tmp_path / "ui.yaml"

    async def scenario() -> None:
        async with build_app(fixture_source, settings_file=settings).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            app.theme = "nord"
            await wait_for(
                pilot, lambda: settings.exists() and "nord" in settings.read_text(), "saved"
            )

    run(scenario())
    assert settings.stat().st_mode & 0o777 == 0o600

    async def again() -> None:
        async with build_app(FixtureSource.from_file(), settings_file=settings).run_test(
            size=SIZE
        ) as pilot:
            app = await ready(pilot)
            assert app.theme == "nord"

    run(again())


def test_row_updates_in_place_keep_the_cursor(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            await pilot.press("down")
            await wait_for(pilot, lambda: app.selected_tenant == "acme", "acme selected")
            table = app.screen.query_one("#tenants", DataTable)
            cursor = table.cursor_row
            app.request_refresh()  # several more polls with the same rows
            app.request_refresh()
            await wait_for(pilot, lambda: not app._polling, "polls done")
            assert table.cursor_row == cursor
            assert app.selected_tenant == "acme"

    run(scenario())


def test_clicking_a_header_sorts_by_it(build_app: Build, fixture_source: FixtureSource) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            assert _rows(app)[0] == "beta"
            await pilot.click("#tenants", offset=(3, 0))  # the "Tenant" header
            await wait_for(
                pilot, lambda: _rows(app) == ["acme", "beta", "delta", "gamma"], "sorted"
            )

    run(scenario())
