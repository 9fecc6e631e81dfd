"""Every key of every screen does what its label says (issue 17), on the fixture source.

The tenant keys are one table run on the overview and on the tenant detail (the same letters
must work on both); each other screen's own keys, ``?`` (the help lists that screen's keys)
and ``escape`` (no "Back" on the root) are checked too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static

from nika_tui.dashboard.fixture_source import FixtureSource
from nika_tui.ui.app import NikaDashboard
from nika_tui.ui.screens.help import HelpScreen
from nika_tui.ui.screens.memories import MemoryBrowserScreen
from nika_tui.ui.widgets.key_bar import KeyBar
from tests.ui.conftest import SIZE
from tests.ui.pilot_helpers import notes, ready, run, screen_is, wait_for

Build = Callable[..., NikaDashboard]


class TenantKey(NamedTuple):
    test_id: str
    key: str
    screen: str = ""
    """The screen the key opens ('' when it acts instead)."""
    action: tuple[str, ...] = ()
    """What the source recorded ('' when it opens a screen)."""


TENANT_KEYS = [
    TenantKey("spawn", "s", action=("spawn", "acme")),
    TenantKey("attach", "a", action=("attach", "acme")),
    TenantKey("stop asks", "x", screen="AskYesNo"),
    TenantKey("restart", "R", action=("restart", "acme")),
    TenantKey("memories", "m", screen="MemoryBrowserScreen"),
    TenantKey("debt", "d", screen="DebtScreen"),
    TenantKey("review", "v", screen="ReviewScreen"),
    TenantKey("purge", "p", screen="PurgeScreen"),
    TenantKey("confirmations", "c", screen="ConfirmationsScreen"),
    TenantKey("bus", "b", screen="BusScreen"),
    TenantKey("recall", "slash", screen="RecallScreen"),
]


async def _on(pilot: Pilot[Any], where: str) -> NikaDashboard:
    """Select acme on the overview, then open ``where`` (overview | detail)."""
    app = await ready(pilot)
    await pilot.press("o", "up")  # by tenant: acme first
    await wait_for(pilot, lambda: app.selected_tenant == "acme", "acme selected")
    if where == "detail":
        await pilot.press("enter")
        await screen_is(pilot, "TenantDetailScreen")
    return app


@pytest.mark.parametrize("where", ["overview", "detail"])
@pytest.mark.parametrize("case", TENANT_KEYS, ids=lambda c: c.test_id)
def test_tenant_keys_work_on_the_overview_and_the_detail(
    where: str, case: TenantKey, build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            await _on(pilot, where)
            await pilot.press(case.key)
            if case.screen:
                await screen_is(pilot, case.screen)
                assert getattr(pilot.app.screen, "tenant_id", "acme") in ("acme", None)
            else:
                await wait_for(pilot, lambda: case.action in fixture_source.actions, case.test_id)

    run(scenario())


@pytest.mark.parametrize(
    ("keys", "screen", "title"),
    [
        ((), "OverviewScreen", "Overview"),
        (("enter",), "TenantDetailScreen", "Tenant detail"),
        (("m",), "MemoryBrowserScreen", "Memory browser"),
        (("d",), "DebtScreen", "Memory debt"),
        (("v",), "ReviewScreen", "Review queue"),
        (("b",), "BusScreen", "Bus / log"),
    ],
)
def test_help_lists_the_keys_of_the_screen_in_front(
    keys: tuple[str, ...], screen: str, title: str, build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await _on(pilot, "overview")
            await pilot.press(*keys)
            await screen_is(pilot, screen)
            bindings = [b for _, b, _, _ in app.screen.active_bindings.values()]
            own = {b.description for b in bindings if b.show}
            await pilot.press("question_mark")
            await screen_is(pilot, "HelpScreen")
            help_screen = app.screen
            assert isinstance(help_screen, HelpScreen)
            assert help_screen.text.startswith(f"# {title}")
            for description in own - {""}:
                assert f"| {description}" in help_screen.text, description
            assert "Cursor up" not in help_screen.text  # the table's keys are not the screen's
            await pilot.press("escape")
            await screen_is(pilot, screen)

    run(scenario())


def test_help_on_the_welcome_is_the_welcome_s(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source, show_welcome=True).run_test(size=SIZE) as pilot:
            await screen_is(pilot, "WelcomeScreen")
            await pilot.press("question_mark")
            await screen_is(pilot, "HelpScreen")
            text = pilot.app.screen.text  # type: ignore[attr-defined]
            assert text.startswith("# Welcome") and "No tenant is configured" in text
            assert "Spawn" not in text  # not the overview's keys

    run(scenario())


def test_no_back_key_on_the_root_overview(build_app: Build, fixture_source: FixtureSource) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            assert "Back" not in str(app.screen.query_one(KeyBar).render())
            await pilot.press("escape")  # nothing to go back to: stays
            await screen_is(pilot, "OverviewScreen")
            await pilot.press("b")
            await screen_is(pilot, "BusScreen")
            await wait_for(
                pilot, lambda: "Back" in str(app.screen.query_one(KeyBar).render()), "bar"
            )
            await pilot.press("escape")
            await screen_is(pilot, "OverviewScreen")

    run(scenario())


def _mem(app: NikaDashboard) -> MemoryBrowserScreen:
    screen = app.screen
    assert isinstance(screen, MemoryBrowserScreen)
    return screen


def _rows(app: NikaDashboard) -> int:
    return int(app.screen.query_one("#mem-table", DataTable).row_count)


def test_memory_browser_filters_timeline_and_search(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await _on(pilot, "overview")
            await pilot.press("m")
            await screen_is(pilot, "MemoryBrowserScreen")
            await wait_for(pilot, lambda: _rows(app) == 4, "4 memories")
            await pilot.press("l")  # layer: semantic
            await wait_for(pilot, lambda: _rows(app) == 3, "3 semantic")
            await pilot.press("l", "l")  # episodic, then all again
            await wait_for(pilot, lambda: _rows(app) == 4 and not _mem(app).flt.layer, "all")
            await pilot.press("t", "t")  # status: current, then retired
            await wait_for(pilot, lambda: _rows(app) == 1, "1 retired")
            assert "m-412" in str(app.screen.query_one("#mem-detail", Static).render())
            # The chain of the retired memory: it, then what replaced it.
            await wait_for(
                pilot,
                lambda: "→ m-881" in str(app.screen.query_one("#mem-detail", Static).render()),
                "the supersede chain",
            )
            await pilot.press("t")  # in review
            await wait_for(pilot, lambda: _rows(app) == 1 and _mem(app).flt.status == "review", "")
            await pilot.press("t")  # all
            await pilot.press("T")
            await wait_for(pilot, lambda: _mem(app).timeline, "timeline on")
            assert "Valid time" in [
                str(c.label) for c in app.screen.query_one(DataTable).columns.values()
            ]
            await pilot.press("T")
            await wait_for(pilot, lambda: not _mem(app).timeline, "timeline off")
            await pilot.press("slash")
            assert app.focused is app.screen.query_one("#mem-search", Input)
            await pilot.press(*"vat", "enter")
            await wait_for(pilot, lambda: _rows(app) == 2, "2 about VAT")
            app.screen.query_one("#mem-as-of", Input).value = "2026-11-15"
            await pilot.press("slash", "enter")
            # As of mid-November only the per-order rule was current.
            await wait_for(pilot, lambda: _rows(app) == 1, "1 current then")
            assert _mem(app).listing.memories[0].id == "m-412"

    run(scenario())


@pytest.mark.parametrize(
    ("key", "status_key", "recorded", "history"),
    [
        ("r", 1, "retire", "retired — person: "),
        ("u", 2, "restore", "restored — person: "),
        ("v", 1, "send-review", "queued for review p"),
    ],
)
def test_memory_actions_ask_first_and_why(
    key: str,
    status_key: int,
    recorded: str,
    history: str,
    build_app: Build,
    fixture_source: FixtureSource,
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await _on(pilot, "overview")
            await pilot.press("m")
            await screen_is(pilot, "MemoryBrowserScreen")
            await pilot.press(*["t"] * status_key)  # current (1) or retired (2)
            await wait_for(pilot, lambda: _rows(app) >= 1 and _mem(app).flt.status, "filtered")
            target = _mem(app).listing.memories[0].id
            await pilot.press(key)
            await screen_is(pilot, "AskReason")
            await pilot.press("y", "n", "escape")  # letters type the reason, never answer
            await screen_is(pilot, "MemoryBrowserScreen")
            assert not [a for a in fixture_source.actions if a[0] == recorded]
            await pilot.press(key)
            await screen_is(pilot, "AskReason")
            await pilot.press("ctrl+u", *"vat moved to invoices", "enter")
            await wait_for(
                pilot, lambda: (recorded, "acme", target) in fixture_source.actions, recorded
            )
            await pilot.press(*["t"] * (4 - status_key))  # every status again
            await pilot.press("slash", *target, "enter")  # the memory acted on, by its id
            await wait_for(
                pilot,
                lambda: f"{history}" in _detail(app) and "vat moved to invoices" in _detail(app),
                "the reason in the memory's history",
            )

    run(scenario())


def test_memory_action_records_the_default_reason(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await _on(pilot, "overview")
            await pilot.press("m")
            await screen_is(pilot, "MemoryBrowserScreen")
            await wait_for(pilot, lambda: _rows(app) == 4, "4 memories")
            target = _mem(app).current()
            assert target is not None and target.status == "current"
            await pilot.press("r")
            await screen_is(pilot, "AskReason")
            await pilot.press("enter")  # the default reason, as offered
            await wait_for(pilot, lambda: "no longer true" in _detail(app), "default reason")
            assert "retired because: person: no longer true" in _detail(app)

    run(scenario())


def _detail(app: NikaDashboard) -> str:
    return str(app.screen.query_one("#mem-detail", Static).render())


def test_memory_browser_is_reachable_from_review_bus_and_recall(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)  # beta first: its review queue has pairs
            await pilot.press("v")
            await screen_is(pilot, "ReviewScreen")
            await wait_for(pilot, lambda: app.screen.query_one(DataTable).row_count, "pairs")
            await pilot.press("m")
            await screen_is(pilot, "MemoryBrowserScreen")
            assert (_mem(app).tenant_id, _mem(app).flt.text) == ("beta", "m-10")
            await pilot.press("escape", "escape")
            await screen_is(pilot, "OverviewScreen")
            await pilot.press("o", "up")
            await wait_for(pilot, lambda: app.selected_tenant == "acme", "acme")
            await pilot.press("b")
            await screen_is(pilot, "BusScreen")
            await wait_for(pilot, lambda: app.screen.latest_memory, "a line about a memory")  # type: ignore[attr-defined]
            await pilot.press("m")
            await screen_is(pilot, "MemoryBrowserScreen")
            assert (_mem(app).tenant_id, _mem(app).flt.text) == ("acme", "m-881")
            await wait_for(pilot, lambda: _rows(app) == 1, "the one memory")
            await pilot.press("escape", "escape")
            await screen_is(pilot, "OverviewScreen")
            await pilot.press("slash")
            await screen_is(pilot, "RecallScreen")
            await pilot.press(*"vat", "enter")
            hits = app.screen.query_one("#recall-hits", Static)
            await wait_for(pilot, lambda: "m-881" in str(hits.render()), "the hit")
            shown = str(hits.render())
            # The CLI's score, explained, with status and valid time.
            assert "cos 0.81" in shown and "cosine similarity" in shown
            assert "current" in shown and "valid from 2026-12-01 15:02" in shown
            await pilot.press("ctrl+o")
            await screen_is(pilot, "MemoryBrowserScreen")
            assert _mem(app).flt.text == "m-881"

    run(scenario())


def test_debt_keys(build_app: Build, fixture_source: FixtureSource) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            await _on(pilot, "overview")
            await pilot.press("d")
            await screen_is(pilot, "DebtScreen")
            await pilot.press("r")
            await wait_for(pilot, lambda: ("audit", "acme") in fixture_source.actions, "audit")
            await pilot.press("m")
            await screen_is(pilot, "MemoryBrowserScreen")

    run(scenario())


def test_palette_offers_setup_add_tenant_demo_and_every_screen(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    from nika_tui.ui.palette import PALETTE, PER_TENANT

    actions = {a for a, _, _ in PALETTE}
    screens = {"detail", "debt", "review", "purge", "confirmations", "bus", "recall", "memories"}
    assert {"setup", "add_tenant", "demo", "overview", "help"} | screens <= actions
    assert {"memories", "recall", "bus", "setup"} <= set(PER_TENANT)

    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            app.run_palette_action("memories", "gamma")
            await screen_is(pilot, "MemoryBrowserScreen")
            assert _mem(app).tenant_id == "gamma"
            app.run_palette_action("overview", None)
            await screen_is(pilot, "OverviewScreen")
            for action in actions:  # every entry names an action the app has
                assert callable(getattr(app, f"action_{action}"))

    run(scenario())


def test_offline_preview_has_a_banner_and_refuses_actions(build_app: Build) -> None:
    source = FixtureSource.from_file(preview=True)

    async def scenario() -> None:
        async with build_app(source, preview=True).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            banner = app.screen.query_one(".preview-banner", Static)
            assert banner.display and "PREVIEW" in str(banner.render())
            await pilot.press("s")
            await wait_for(pilot, lambda: any("preview" in n for n in notes(app)), "refused")
            assert source.actions == []
            await pilot.press("b")
            await screen_is(pilot, "BusScreen")
            assert app.screen.query_one(".preview-banner", Static).display

    run(scenario())


@pytest.mark.parametrize("key", ["q", "ctrl+q"])
def test_quit_says_what_keeps_running(
    key: str, build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            await pilot.press(key)
            await wait_for(pilot, lambda: app._exit, "exit")
            said = " ".join(str(r) for r in app._exit_renderables)
            assert "the memory service" in said and "acme (working)" in said
            assert "nika down" in said
            # No REDIS_URL: the dashboard's Redis is nika's embedded one, which stays up.
            assert "the embedded Redis" in said and "`nika down --redis`" in said

    run(scenario())
