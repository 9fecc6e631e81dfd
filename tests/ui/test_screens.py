"""Every screen and its keys, on the fixture source (real parsing, fixed clock)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.widgets import DataTable, Input, RichLog, Static

from nika_tui.dashboard.fixture_source import FixtureSource
from nika_tui.dashboard.model import BusFilter
from nika_tui.settings import Settings
from nika_tui.ui.app import NikaDashboard
from nika_tui.ui.screens.bus import BusScreen
from nika_tui.ui.screens.review import ReviewScreen
from tests.ui.conftest import SIZE
from tests.ui.pilot_helpers import notes, ready, run, screen_is, wait_for

Build = Callable[..., NikaDashboard]


def _text(app: NikaDashboard, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def test_detail_shows_pane_fill_history_counts_and_strategies(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            await pilot.press("enter")  # beta is first
            await screen_is(pilot, "TenantDetailScreen")
            await wait_for(pilot, lambda: "rm -rf build/" in _text(app, "#pane"), "the live pane")
            await wait_for(pilot, lambda: "semantic" in _text(app, "#memory-counts"), "counts")
            assert "current 2210" in _text(app, "#memory-counts")
            assert "configure a Scaleway API key" in _text(app, "#strategies")
            assert "Compact the context" in _text(app, "#confirmations")
            await pilot.press("escape")
            await screen_is(pilot, "OverviewScreen")

    run(scenario())


def test_detail_lists_compaction_events(build_app: Build, fixture_source: FixtureSource) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            app.selected_tenant = "acme"
            app.action_detail()
            await screen_is(pilot, "TenantDetailScreen")
            await wait_for(pilot, lambda: "compaction" in _text(app, "#compactions"), "compactions")
            assert "2026-12-02 09:35 (61% line) at 61%" in _text(app, "#compactions")
            assert "compress_to_repo" in _text(app, "#strategies")

    run(scenario())


def test_debt_screen_metrics_and_run_audit(build_app: Build, fixture_source: FixtureSource) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            await pilot.press("d")
            await screen_is(pilot, "DebtScreen")
            await wait_for(pilot, lambda: len(app.screen.query("MetricRow")) == 2, "2 metrics")
            first = app.screen.query("MetricRow").first()
            assert "metric-alert" in first.classes
            labels = " ".join(str(lbl.render()) for lbl in first.query("Label"))
            assert "duplicate_rate" in labels and "ALERT" in labels and "[auto: asks you]" in labels
            await pilot.press("r")
            await wait_for(pilot, lambda: ("audit", "beta") in fixture_source.actions, "audit run")

    run(scenario())


def test_debt_screen_says_a_critical_metric_no_longer_pauses_ingestion(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    """The audit's ``pause_waived`` (decision 446) is said under the title, not left silent."""
    reason = "duplicate_rate = 0.12 ratio (>= 1.5 x 0.05)"
    with fixture_source._lock:
        reports = fixture_source._t("beta")["debt_reports"]
        reports[-1] = {**reports[-1], "pause_waived": [reason]}

    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            await pilot.press("d")
            await screen_is(pilot, "DebtScreen")

            def title() -> str:
                return str(app.screen.query_one("#debt-title", Static).render())

            await wait_for(pilot, lambda: "not paused" in title(), "the waived line")
            assert "the action you approved changed nothing" in title() and reason in title()

    run(scenario())


def test_review_approve_keep_skip_and_batch(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            await pilot.press("v")
            await screen_is(pilot, "ReviewScreen")
            screen = app.screen
            assert isinstance(screen, ReviewScreen)
            await wait_for(pilot, lambda: len(screen.items) == 2, "two pairs")
            assert "Postgres 15" in _text(app, "#old-side")
            assert "Postgres 16" in _text(app, "#new-side")
            assert "session s-40 · agent codex · turn 7" in _text(app, "#new-side")
            assert "hedged wording" in _text(app, "#review-reason")
            await pilot.press("s")  # skip rv-1: nothing changes, cursor moves on
            await wait_for(
                pilot, lambda: ("review", "beta", "rv-1", "skip") in fixture_source.actions, "skip"
            )
            assert len(fixture_source.review_items("beta")) == 2
            await pilot.press("k")  # keep both on rv-2 (the cursor moved there)
            await wait_for(
                pilot, lambda: ("review", "beta", "rv-2", "keep") in fixture_source.actions, "keep"
            )
            await wait_for(pilot, lambda: len(screen.items) == 1, "rv-2 left the queue")
            await pilot.press("a")  # approve-replace rv-1
            await wait_for(
                pilot,
                lambda: ("review", "beta", "rv-1", "replace") in fixture_source.actions,
                "replace",
            )
            await wait_for(pilot, lambda: not screen.items, "queue empty")
            # Resolutions are logged on the bus.
            tail = fixture_source.bus_tail(BusFilter(tenant="beta"), None)
            assert [ln.kind for ln in tail.lines].count("review.resolved") == 2

    run(scenario())


def test_review_batch_keep_marked(build_app: Build, fixture_source: FixtureSource) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            await pilot.press("v")
            await screen_is(pilot, "ReviewScreen")
            screen = app.screen
            assert isinstance(screen, ReviewScreen)
            await wait_for(pilot, lambda: len(screen.items) == 2, "two pairs")
            await pilot.press("space", "down", "space")
            assert screen.marked == {"rv-1", "rv-2"}
            await pilot.press("K")
            await wait_for(pilot, lambda: not screen.items, "both kept and gone")
            kept = [a for a in fixture_source.actions if a[0] == "review" and a[3] == "keep"]
            assert sorted(a[2] for a in kept) == ["rv-1", "rv-2"]

    run(scenario())


def test_purge_refuses_a_wrong_tenant_id_then_applies(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            await pilot.press("p")
            await screen_is(pilot, "PurgeScreen")
            await wait_for(
                pilot,
                lambda: app.screen.query_one("#purge-items", DataTable).row_count == 3,
                "plan",
            )
            assert "dry run: 2 would be removed" in _text(app, "#purge-title")
            assert "1 blocked by active references" in _text(app, "#purge-title")
            await pilot.press("c")
            await screen_is(pilot, "ConfirmPurge")
            await pilot.press(*"acme", "enter")  # another tenant's id: refused
            await pilot.pause()
            assert "'acme' is not 'beta': nothing purged" in _text(app, "#confirm-error")
            assert type(app.screen).__name__ == "ConfirmPurge"
            assert ("purge", "beta") not in fixture_source.actions
            await pilot.press(*"beta", "enter")
            await screen_is(pilot, "PurgeScreen")
            await wait_for(
                pilot, lambda: ("purge", "beta") in fixture_source.actions, "purge applied"
            )
            await wait_for(
                pilot, lambda: any("removed 2, skipped 1" in n for n in notes(app)), "result"
            )
            # The blocked item stays in the plan.
            await wait_for(
                pilot,
                lambda: app.screen.query_one("#purge-items", DataTable).row_count == 1,
                "left",
            )

    run(scenario())


def test_purge_source_refuses_a_wrong_id_itself(fixture_source: FixtureSource) -> None:
    from nika_tui.errors import ValidationFailed

    try:
        fixture_source.apply_purge("beta", "bet")
    except ValidationFailed as exc:
        assert "does not match" in exc.message
    else:
        raise AssertionError("a wrong confirmation was accepted")
    assert ("purge", "beta") not in fixture_source.actions


def test_fixture_confirmations_list_approve_and_reject_are_recorded(
    fixture_source: FixtureSource,
) -> None:
    from nika_tui.errors import ServiceNotRunning, StoreUnavailable, ValidationFailed

    listed = fixture_source.confirmations(None)
    assert [(p.tenant_id, p.view.id, p.view.kind) for p in listed] == [
        ("beta", "c-2", "purge.apply"),  # oldest first
        ("beta", "c-1", "compact"),
        ("beta", "c-3", "debt.dedup"),
    ]
    assert fixture_source.confirmations("acme") == []
    assert fixture_source.resolve_confirmation("beta", "c-1", True) == "approved compact for beta"
    assert fixture_source.resolve_confirmation("beta", "c-3", False) == (
        "rejected debt.dedup for beta"
    )
    assert [p.view.id for p in fixture_source.confirmations("beta")] == ["c-2"]
    with pytest.raises(ValidationFailed, match="no pending confirmation 'c-1'"):
        fixture_source.resolve_confirmation("beta", "c-1", False)  # already decided
    fixture_source.service_ok = False
    with pytest.raises(ServiceNotRunning):
        fixture_source.resolve_confirmation("beta", "c-2", True)  # the purge runs in the service
    assert fixture_source.actions == [
        ("confirmation", "beta", "c-1", "approved"),
        ("confirmation", "beta", "c-3", "rejected"),
    ]
    snap = fixture_source.snapshot(fixture_source.now).row("beta")
    assert snap is not None and snap.confirmation_count == 1
    logged = fixture_source.bus_tail(BusFilter(tenant="beta"), None).lines
    assert [ln.kind for ln in logged[-2:]] == ["confirmation.resolved"] * 2
    fixture_source.redis_ok = False
    with pytest.raises(StoreUnavailable, match="Redis is not reachable"):
        fixture_source.confirmations(None)  # said, not an empty list


def test_bus_tail_filters_and_keeps_unreadable_lines(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            app.selected_tenant = None
            app.action_bus()
            await screen_is(pilot, "BusScreen")
            screen = app.screen
            assert isinstance(screen, BusScreen)
            await wait_for(pilot, lambda: screen.lines_shown == 5, "all 5 lines")
            log = screen.query_one("#bus-log", RichLog)
            text = "\n".join(str(line.text) for line in log.lines)
            assert "unreadable not json {{ truncated" in text
            screen.query_one("#f-domain", Input).value = "hooks"
            await wait_for(pilot, lambda: screen.lines_shown == 1, "domain filter")
            screen.query_one("#f-domain", Input).value = ""
            screen.query_one("#f-action", Input).value = "review"
            await wait_for(pilot, lambda: screen.lines_shown == 1, "action filter")
            screen.query_one("#f-action", Input).value = ""
            screen.query_one("#f-tenant", Input).value = "acme"
            await wait_for(pilot, lambda: screen.lines_shown == 2, "tenant filter")

    run(scenario())


def test_recall_hits_with_envelope_and_palace_line(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            app.selected_tenant = "acme"
            await pilot.press("slash")
            await screen_is(pilot, "RecallScreen")
            await pilot.press(*"vat rounding", "enter")
            await wait_for(pilot, lambda: "m-881" in _text(app, "#recall-hits"), "a hit")
            assert "session_id=s-77" in _text(app, "#recall-hits")
            assert "agent_type=claude-code" in _text(app, "#recall-hits")
            app.screen.query_one("#recall-query", Input).value = ""
            await pilot.press(*"kubernetes", "enter")
            await wait_for(
                pilot, lambda: "no memory for kubernetes" in _text(app, "#recall-hits"), "PALACE"
            )

    run(scenario())


def test_welcome_offers_wizard_demo_and_preview(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source, show_welcome=True).run_test(size=SIZE) as pilot:
            app = pilot.app
            await screen_is(pilot, "WelcomeScreen")
            labels = [str(b.label) for b in app.screen.query("Button")]
            assert labels[:3] == [
                "Set up a tenant (wizard)",
                "Try the demo tenant",
                "Preview with sample data",
            ]
            await pilot.click("#preview")
            await screen_is(pilot, "OverviewScreen")
            await wait_for(
                pilot, lambda: app.snapshot is not None and len(app.snapshot.tenants) == 4, "rows"
            )

    run(scenario())


def test_leaving_the_welcome_shows_the_overview_keys(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    from nika_tui.ui.widgets.key_bar import KeyBar

    async def scenario() -> None:
        async with build_app(fixture_source, show_welcome=True).run_test(size=SIZE) as pilot:
            app = pilot.app
            await screen_is(pilot, "WelcomeScreen")
            await pilot.click("#preview")
            await screen_is(pilot, "OverviewScreen")
            bar = app.screen.query_one(KeyBar)
            await wait_for(pilot, lambda: "Spawn" in str(bar.render()), "overview keys shown")
            await pilot.pause()
            rendered = "".join(s.text for s in bar.render_line(0))
            assert "Spawn" in rendered and "Filter" in rendered

    run(scenario())


def test_welcome_is_shown_when_no_tenant_exists(
    isolated_env: dict[str, str], tmp_path: object
) -> None:
    from nika_tui.ui.app import make_app

    app = make_app(Settings.from_env(isolated_env), source=FixtureSource.from_file())
    assert app.options.show_welcome is True
