"""The memory browser reaches every memory of a tenant past the 500-row page (issue 17).

A Pilot test on the fixture source with 1,204 memories for acme: the first page is 500 rows and
the title says how many are left; ``n`` appends the next page; moving to the last row appends
the one after; ``n`` then says all are shown. Every id arrives once, newest valid time first.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from textual.widgets import DataTable, Static

from nika_tui.dashboard.fixture_source import FixtureSource
from nika_tui.dashboard.memory_views import PAGE
from nika_tui.ui.app import NikaDashboard
from nika_tui.ui.screens.memories import MemoryBrowserScreen
from tests.ui.conftest import SIZE
from tests.ui.pilot_helpers import notes, ready, run, screen_is, wait_for

Build = Callable[..., NikaDashboard]
EXTRA = 1200


def _rows(app: NikaDashboard) -> int:
    return int(app.screen.query_one("#mem-table", DataTable).row_count)


def _title(app: NikaDashboard) -> str:
    return str(app.screen.query_one("#mem-title", Static).render())


def test_every_memory_is_reachable_past_the_first_page(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    with fixture_source._lock:
        memories: list[dict[str, Any]] = fixture_source._t("acme")["memories"]
        template = memories[0]
        start = datetime(2020, 1, 1, tzinfo=UTC)
        for i in range(EXTRA):
            when = (start + timedelta(hours=i)).isoformat()
            memories.append(
                {**template, "id": f"bulk-{i:04d}", "text": f"fact number {i}",
                 "valid_from": when, "superseded_by": None, "status": "current"}
            )  # fmt: skip
        total = len(memories)
    assert total > 2 * PAGE

    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            await pilot.press("o", "up")  # by tenant: acme first
            await wait_for(pilot, lambda: app.selected_tenant == "acme", "acme selected")
            await pilot.press("m")
            await screen_is(pilot, "MemoryBrowserScreen")
            await wait_for(pilot, lambda: _rows(app) == PAGE, "the first page")
            assert f"{PAGE} shown of {total}" in _title(app)
            assert f"n loads {PAGE} more" in _title(app)

            await pilot.press("n")  # the next page, appended below
            await wait_for(pilot, lambda: _rows(app) == 2 * PAGE, "two pages")
            assert app.screen.query_one("#mem-table", DataTable).cursor_row == 0  # not moved

            await pilot.press("ctrl+end")  # the last row reached: the rest follows
            await wait_for(pilot, lambda: _rows(app) == total, "every memory")
            assert "more" not in _title(app) and f"{total} shown" in _title(app)
            screen = app.screen
            assert isinstance(screen, MemoryBrowserScreen)
            ids = [m.id for m in screen.listing.memories]
            assert len(set(ids)) == total  # each once
            valid = [m.valid_from for m in screen.listing.memories if m.valid_from]
            assert valid == sorted(valid, reverse=True)  # newest first, across the pages
            assert ids[-1] == "bulk-0000"  # the oldest memory, reachable at the end

            await pilot.press("n")
            await wait_for(pilot, lambda: f"all {total} memories are shown" in notes(app), "said")

            await pilot.press("ctrl+r")  # a reload keeps every loaded row
            await wait_for(pilot, lambda: _rows(app) == total, "reloaded")
            await pilot.press("t")  # a new filter starts from its first page again
            await wait_for(pilot, lambda: _rows(app) == PAGE, "the first page of current")

    run(scenario())
