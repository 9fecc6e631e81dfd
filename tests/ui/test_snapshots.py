"""SVG snapshots of every screen at a fixed size, from the fixture source (fixed clock).

Update after an intended visual change with ``pytest tests/ui/test_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable

from nika_tui.dashboard.fixture_source import FixtureSource
from nika_tui.settings import Settings
from nika_tui.ui.app import NikaDashboard, make_app
from nika_tui.ui.widgets.charts import TimeChart
from tests.ui.conftest import SIZE
from tests.ui.pilot_helpers import ready, screen_is, wait_for

Before = Callable[[Pilot[Any]], Awaitable[None]]


def _app(
    env: dict[str, str],
    tmp: Any,
    welcome: bool = False,
    service_ok: bool = True,
    redis_ok: bool = True,
) -> NikaDashboard:
    source = FixtureSource.from_file()
    source.service_ok, source.redis_ok = service_ok, redis_ok
    return make_app(
        Settings.from_env(env),
        source=source,
        clock=lambda: source.now,
        show_welcome=welcome,
        settings_file=tmp / "ui.yaml",
    )


def _then(
    *keys: str, screen: str, probe: Callable[[NikaDashboard], object] | None = None
) -> Before:
    async def before(pilot: Pilot[Any]) -> None:
        app = await ready(pilot)
        await pilot.press(*keys)
        await screen_is(pilot, screen)
        if probe is not None:
            await wait_for(pilot, lambda: probe(app), f"{screen} content")
        await pilot.pause(0.2)

    return before


def _text(app: NikaDashboard, selector: str) -> str:
    return str(app.screen.query_one(selector).render())


def _rows(app: NikaDashboard, selector: str) -> int:
    return int(app.screen.query_one(selector, DataTable).row_count)


def _has_chart(app: NikaDashboard) -> bool:
    chart = app.screen.query_one("#fill-history", TimeChart)
    # Drawn at its full height: the layout after the data arrived has run (else a loaded
    # machine snapshots the two-line "no data" frame).
    return chart.has_data and chart.size.height > 2


CASES: dict[str, Before] = {
    "overview": _then(screen="OverviewScreen"),
    "overview_needs_me": _then("n", screen="OverviewScreen"),
    "detail": _then(
        "enter",
        screen="TenantDetailScreen",
        probe=lambda a: (
            "semantic" in _text(a, "#memory-counts")
            and "rm -rf" in _text(a, "#pane")
            and _has_chart(a)
        ),
    ),
    "debt": _then("d", screen="DebtScreen", probe=lambda a: len(a.screen.query("MetricRow")) == 2),
    "review": _then(
        "v", screen="ReviewScreen", probe=lambda a: "Postgres 16" in _text(a, "#new-side")
    ),
    "purge": _then(
        "p", screen="PurgeScreen", probe=lambda a: "dry run" in _text(a, "#purge-title")
    ),
    "purge_confirm_refused": _then(
        "p", screen="PurgeScreen", probe=lambda a: "dry run" in _text(a, "#purge-title")
    ),
    "bus": _then("b", screen="BusScreen", probe=lambda a: getattr(a.screen, "lines_shown", 0) == 3),
    "recall": _then("down", "slash", screen="RecallScreen"),
    "help": _then("question_mark", screen="HelpScreen"),
    # Issue 17: the memory browser (table, timeline) and the charts, with data and without.
    "memories": _then(
        "o", "up", "m", screen="MemoryBrowserScreen", probe=lambda a: _rows(a, "#mem-table") == 4
    ),
    "memories_timeline": _then(
        "o",
        "up",
        "m",
        "T",
        screen="MemoryBrowserScreen",
        probe=lambda a: _rows(a, "#mem-table") == 4 and "timeline" in _text(a, "#mem-title"),
    ),
    # A tenant with no memories: the empty table and the detail pane saying so.
    "memories_empty": _then(
        "o",
        "down",
        "m",
        screen="MemoryBrowserScreen",
        probe=lambda a: (
            _rows(a, "#mem-table") == 0 and "no memory matches" in _text(a, "#mem-detail")
        ),
    ),
    "detail_fill_chart": _then("o", "up", "enter", screen="TenantDetailScreen", probe=_has_chart),
    "detail_no_data": _then(
        "o",
        "down",
        "enter",
        screen="TenantDetailScreen",
        probe=lambda a: "heartbeat" in _text(a, "#detail-title") and not _has_chart(a),
    ),
    "debt_charts_and_no_data": _then(
        "o", "up", "d", screen="DebtScreen", probe=lambda a: len(a.screen.query("MetricRow")) == 3
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_screen_snapshot(
    name: str, snap_compare: Any, isolated_env: dict[str, str], tmp_path: Any
) -> None:
    before = CASES[name]
    if name == "purge_confirm_refused":
        inner = before

        async def before(pilot: Pilot[Any]) -> None:
            await inner(pilot)
            await pilot.press("c")
            await screen_is(pilot, "ConfirmPurge")
            await pilot.press(*"acme", "enter")
            await pilot.pause(0.2)

    if name == "recall":
        inner_recall = before

        async def before(pilot: Pilot[Any]) -> None:
            await inner_recall(pilot)
            await pilot.press(*"vat", "enter")
            await wait_for(pilot, lambda: "m-881" in _text(pilot.app, "#recall-hits"), "hit")  # type: ignore[arg-type]
            await pilot.pause(0.2)

    assert snap_compare(_app(isolated_env, tmp_path), terminal_size=SIZE, run_before=before)


def test_welcome_snapshot(snap_compare: Any, isolated_env: dict[str, str], tmp_path: Any) -> None:
    async def before(pilot: Pilot[Any]) -> None:
        await screen_is(pilot, "WelcomeScreen")
        await pilot.pause(0.2)

    assert snap_compare(
        _app(isolated_env, tmp_path, welcome=True), terminal_size=SIZE, run_before=before
    )


@pytest.mark.parametrize("mode", ["redis_down", "service_down"])
def test_degraded_snapshot(
    mode: str, snap_compare: Any, isolated_env: dict[str, str], tmp_path: Any
) -> None:
    app = _app(isolated_env, tmp_path, redis_ok=mode != "redis_down", service_ok=False)
    assert snap_compare(app, terminal_size=SIZE, run_before=_then(screen="OverviewScreen"))
