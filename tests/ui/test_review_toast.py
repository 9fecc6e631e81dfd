"""A pair queued for review is announced with the judge's reason and the pair (issue 17).

The CLI prints ``review … queued (judge: reason)``; the dashboard's toast said only how many
pairs waited. The fixture source's queue gains a pair between two polls, as the service's
ingest would add one.
"""

from __future__ import annotations

from collections.abc import Callable

from nika_tui.dashboard.fixture_source import FixtureSource
from nika_tui.ui.app import NikaDashboard
from tests.ui.conftest import SIZE
from tests.ui.pilot_helpers import notes, ready, run, screen_is, wait_for

Build = Callable[..., NikaDashboard]

PAIR = {
    "id": "rv-9",
    "reason": "the judge is unreachable [HTTP 401]: a person decides",
    "judge": "cloud",
    "created_at": "2026-12-02T10:01:00+00:00",
    "old": {"id": "m-1", "text": "Deploys go to staging-1.", "valid_from": "2026-11-01T10:00:00"},
    "new": {"id": "m-2", "text": "Deploys go to staging-2.", "valid_from": "2026-12-02T10:00:00"},
}


def test_the_toast_of_a_queued_pair_says_why_and_shows_the_pair(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            with fixture_source._lock:
                fixture_source._t("acme").setdefault("review", []).append(dict(PAIR))
            app.request_refresh()
            await wait_for(pilot, lambda: any("rv-9" in n for n in notes(app)), "the toast")
            (toast,) = [n for n in notes(app) if "rv-9" in n]
            assert "acme: review rv-9 queued (cloud: the judge is unreachable [HTTP 401]" in toast
            assert "old: Deploys go to staging-1." in toast
            assert "new: Deploys go to staging-2." in toast
            # The queue entry says the same: its reason and the pair side by side.
            app.selected_tenant = "acme"
            await pilot.press("v")
            await screen_is(pilot, "ReviewScreen")
            reason = app.screen.query_one("#review-reason")
            await wait_for(pilot, lambda: "rv-9" in str(app.screen.items), "the entry")  # type: ignore[attr-defined]
            assert "judge cloud: the judge is unreachable [HTTP 401]" in str(reason.render())
            assert "staging-1" in str(app.screen.query_one("#old-side").render())
            assert "staging-2" in str(app.screen.query_one("#new-side").render())

    run(scenario())


def test_the_toast_falls_back_to_the_count_when_the_queue_cannot_be_read() -> None:
    from nika_tui.ui.widgets.memory_text import review_toast

    assert review_toast("acme", 2, []) == "acme: 2 new pair(s) in the review queue (v opens it)"
