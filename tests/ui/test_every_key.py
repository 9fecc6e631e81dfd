"""Every key of every screen, and every palette entry, does what its label says (issue 17).

The cases are checked against the screens' own ``BINDINGS`` (and the app's): a key added to a
screen without a case here fails :func:`test_every_declared_key_has_a_case`, and so does a new
screen. Each case opens its screen the way a person would, presses the key once and waits for
what the key's help line promises (a screen, an action the source recorded, a changed filter,
or a plain sentence saying why it cannot); the app must still be running, without an error.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from textual.app import App
from textual.pilot import Pilot
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Input

import nika_tui.ui.screens as screens_pkg
from nika_tui.dashboard.fixture_source import FixtureSource
from nika_tui.ui.app import NikaDashboard
from nika_tui.ui.palette import PALETTE
from tests.ui.conftest import SIZE
from tests.ui.pilot_helpers import notes, ready, run, screen_is, wait_for

Build = Callable[..., NikaDashboard]
Probe = Callable[[NikaDashboard, FixtureSource], object]


def _own_keys(cls: type[Any], base: type[Any]) -> set[str]:
    """Keys ``cls`` binds beyond Textual's own ``base`` (tab, ctrl+c copy…)."""
    return set(cls._merged_bindings.key_to_bindings) - set(base._merged_bindings.key_to_bindings)


def _screen_classes() -> dict[str, type[Screen[Any]]]:
    for info in pkgutil.iter_modules(screens_pkg.__path__):
        importlib.import_module(f"{screens_pkg.__name__}.{info.name}")

    def below(cls: type[Any]) -> list[type[Any]]:
        return [c for s in cls.__subclasses__() for c in (s, *below(s))]

    found = {c.__name__: c for c in below(Screen) if c.__module__.startswith("nika_tui.ui")}
    found.pop("DashboardScreen")  # abstract: its escape is checked on each screen
    return found


# --- how each screen is reached -----------------------------------------------------------
async def _acme(pilot: Pilot[Any]) -> None:
    app = await ready(pilot)
    await pilot.press("o", "up")  # by tenant: acme first
    await wait_for(pilot, lambda: app.selected_tenant == "acme", "acme selected")


async def _beta(pilot: Pilot[Any]) -> None:
    await ready(pilot)  # beta sorts first: its queues have pairs, confirmations, a purge plan


def _rows(app: NikaDashboard, selector: str = "DataTable") -> int:
    return int(app.screen.query_one(selector, DataTable).row_count)


def _via(first: Callable[[Pilot[Any]], Awaitable[None]], *keys: str, name: str, until: Probe):
    async def reach(pilot: Pilot[Any], source: FixtureSource) -> None:
        await first(pilot)
        await pilot.press(*keys)
        await screen_is(pilot, name)
        app = pilot.app
        assert isinstance(app, NikaDashboard)
        await wait_for(pilot, lambda: until(app, source), f"{name} loaded")

    return reach


def _always(app: NikaDashboard, source: FixtureSource) -> bool:
    return True


REACH = {
    "OverviewScreen": _via(_acme, name="OverviewScreen", until=_always),
    "TenantDetailScreen": _via(_acme, "enter", name="TenantDetailScreen", until=_always),
    "MemoryBrowserScreen": _via(
        _acme, "m", name="MemoryBrowserScreen", until=lambda a, s: _rows(a, "#mem-table") == 4
    ),
    "DebtScreen": _via(_acme, "d", name="DebtScreen", until=_always),
    "ReviewScreen": _via(_beta, "v", name="ReviewScreen", until=lambda a, s: _rows(a) == 2),
    "PurgeScreen": _via(_beta, "p", name="PurgeScreen", until=lambda a, s: a.screen.plan),  # type: ignore[attr-defined]
    "ConfirmationsScreen": _via(
        _beta, "c", name="ConfirmationsScreen", until=lambda a, s: _rows(a) == 3
    ),
    "BusScreen": _via(_acme, "b", name="BusScreen", until=lambda a, s: a.screen.latest_memory),  # type: ignore[attr-defined]
    "RecallScreen": _via(
        _acme,
        "slash",
        "v",
        "a",
        "t",
        "enter",
        name="RecallScreen",
        until=lambda a, s: a.screen.view is not None and a.screen.view.hits,  # type: ignore[attr-defined]
    ),
    "HelpScreen": _via(_acme, "question_mark", name="HelpScreen", until=_always),
    "AskYesNo": _via(_acme, "x", name="AskYesNo", until=_always),
    "AskReason": _via(_acme, "m", "r", name="AskReason", until=_always),
    "ApproveAction": _via(_beta, "c", "down", "a", name="ApproveAction", until=_always),
    "ConfirmPurge": _via(_beta, "p", "c", name="ConfirmPurge", until=_always),
    "ConfirmPurgeApproval": _via(_beta, "c", "a", name="ConfirmPurgeApproval", until=_always),
}
"""Screen name → how a person reaches it (WelcomeScreen: the app opens on it)."""


# --- what each key must do ----------------------------------------------------------------
def on(name: str) -> Probe:
    return lambda app, source: type(app.screen).__name__ == name and app.screen.is_mounted


def did(*action: str) -> Probe:
    return lambda app, source: action in source.actions


def said(text: str) -> Probe:
    return lambda app, source: any(text in n for n in notes(app))


def holds(check: Callable[[Any], object]) -> Probe:
    return lambda app, source: check(app.screen)


def nothing_recorded(name: str) -> Probe:
    return lambda app, source: on(name)(app, source) and not source.actions


def exited(app: NikaDashboard, source: FixtureSource) -> bool:
    return bool(app._exit)


class Key(NamedTuple):
    screen: str
    key: str
    expect: Probe
    before: tuple[str, ...] = ()
    """Keys pressed first (e.g. mark a pair before a batch key)."""


TENANT_KEYS = {
    "s": did("spawn", "acme"),
    "a": did("attach", "acme"),
    "x": on("AskYesNo"),
    "R": did("restart", "acme"),
    "m": on("MemoryBrowserScreen"),
    "d": on("DebtScreen"),
    "v": on("ReviewScreen"),
    "p": on("PurgeScreen"),
    "c": on("ConfirmationsScreen"),
    "b": on("BusScreen"),
    "slash": on("RecallScreen"),
}
ON_ROOT = on("OverviewScreen")

CASES: list[Key] = [
    *(Key("OverviewScreen", k, e) for k, e in TENANT_KEYS.items()),
    Key("OverviewScreen", "escape", ON_ROOT),  # the root: nothing to go back to, it stays
    Key("OverviewScreen", "f", holds(lambda s: s.state_filter)),
    Key("OverviewScreen", "n", holds(lambda s: s.needs_me)),
    Key("OverviewScreen", "o", holds(lambda s: s.sort_key != "tenant")),
    *(Key("TenantDetailScreen", k, e) for k, e in TENANT_KEYS.items()),
    Key("TenantDetailScreen", "escape", ON_ROOT),
    Key("MemoryBrowserScreen", "escape", ON_ROOT),
    Key(
        "MemoryBrowserScreen",
        "slash",
        lambda app, s: app.focused is app.screen.query_one("#mem-search", Input),
    ),
    Key("MemoryBrowserScreen", "l", holds(lambda s: s.flt.layer == "semantic")),
    Key("MemoryBrowserScreen", "t", holds(lambda s: s.flt.status == "current")),
    Key("MemoryBrowserScreen", "T", holds(lambda s: s.timeline)),
    Key("MemoryBrowserScreen", "r", on("AskReason")),
    # The newest memory is current: restoring it says why not instead of asking.
    Key("MemoryBrowserScreen", "u", said("only a retired memory can be restored")),
    Key("MemoryBrowserScreen", "v", on("AskReason")),
    Key("MemoryBrowserScreen", "ctrl+r", holds(lambda s: s.listing.total == 5)),
    Key("MemoryBrowserScreen", "n", said("all 4 memories are shown")),  # one page holds them
    Key("DebtScreen", "escape", ON_ROOT),
    Key("DebtScreen", "r", did("audit", "acme")),
    Key("DebtScreen", "m", on("MemoryBrowserScreen")),
    Key("ReviewScreen", "escape", ON_ROOT),
    Key("ReviewScreen", "a", did("review", "beta", "rv-1", "replace")),
    Key("ReviewScreen", "k", did("review", "beta", "rv-1", "keep")),
    Key("ReviewScreen", "s", did("review", "beta", "rv-1", "skip")),
    Key("ReviewScreen", "space", holds(lambda s: s.marked == {"rv-1"})),
    Key("ReviewScreen", "A", did("review", "beta", "rv-1", "replace"), ("space",)),
    Key("ReviewScreen", "K", did("review", "beta", "rv-1", "keep"), ("space",)),
    Key("ReviewScreen", "m", on("MemoryBrowserScreen")),
    Key("ReviewScreen", "M", on("MemoryBrowserScreen")),
    Key("PurgeScreen", "escape", ON_ROOT),
    Key("PurgeScreen", "c", on("ConfirmPurge")),
    Key("PurgeScreen", "r", holds(lambda s: len(s.plan.items) == 1)),
    Key("ConfirmationsScreen", "escape", ON_ROOT),
    Key("ConfirmationsScreen", "a", on("ConfirmPurgeApproval")),  # the first one is a purge
    Key("ConfirmationsScreen", "x", did("confirmation", "beta", "c-2", "rejected")),
    Key("ConfirmationsScreen", "t", holds(lambda s: s.all_tenants)),
    Key("ConfirmationsScreen", "r", holds(lambda s: len(s.items) == 2)),
    Key("BusScreen", "escape", ON_ROOT),
    Key("BusScreen", "m", on("MemoryBrowserScreen")),
    # The sample bus has one line about a memory: the keys say there is nowhere to move.
    Key("BusScreen", "ctrl+n", said("only one line about a memory")),
    Key("BusScreen", "ctrl+b", said("only one line about a memory")),
    Key("RecallScreen", "escape", ON_ROOT),
    Key("RecallScreen", "ctrl+o", on("MemoryBrowserScreen")),
    # The sample recall has one hit: the keys say there is nowhere to move.
    Key("RecallScreen", "ctrl+n", said("only one hit")),
    Key("RecallScreen", "ctrl+b", said("only one hit")),
    Key("RecallScreen", "ctrl+y", did("mark", "acme", "m-881", "useful")),
    Key("RecallScreen", "ctrl+g", did("mark", "acme", "m-881", "not")),
    Key("HelpScreen", "escape", ON_ROOT),
    Key("HelpScreen", "question_mark", ON_ROOT),
    Key("WelcomeScreen", "q", exited),
    Key("AskYesNo", "y", did("stop", "acme")),
    Key("AskYesNo", "n", nothing_recorded("OverviewScreen")),
    Key("AskYesNo", "escape", nothing_recorded("OverviewScreen")),
    Key("AskReason", "escape", nothing_recorded("MemoryBrowserScreen")),
    Key("ApproveAction", "y", did("confirmation", "beta", "c-1", "approved")),
    Key("ApproveAction", "n", nothing_recorded("ConfirmationsScreen")),
    Key("ApproveAction", "escape", nothing_recorded("ConfirmationsScreen")),
    Key("ConfirmPurge", "escape", nothing_recorded("PurgeScreen")),
    Key("ConfirmPurgeApproval", "escape", nothing_recorded("ConfirmationsScreen")),
]

APP_CASES: list[Key] = [
    Key("app", "q", exited),
    Key("app", "ctrl+q", exited),
    Key("app", "question_mark", on("HelpScreen")),
    Key("app", "ctrl+r", holds(lambda s: s.app.snapshot is not s.app.first_snapshot)),
    Key("app", "ctrl+c", said("ctrl+q")),  # Textual's own: says how to quit
]


def test_every_declared_key_has_a_case() -> None:
    classes = _screen_classes()
    declared = {
        (name, key)
        for name, cls in classes.items()
        for key in _own_keys(cls, ModalScreen if issubclass(cls, ModalScreen) else Screen)
    }
    assert declared == {(c.screen, c.key) for c in CASES}
    assert set(REACH) | {"WelcomeScreen"} == set(classes)
    assert _own_keys(NikaDashboard, App) | {"ctrl+q", "ctrl+c"} == {c.key for c in APP_CASES}


def _change_the_data(case: Key, source: FixtureSource) -> None:
    """What a reload key must pick up: data that changed after the screen read it."""
    with source._lock:
        if case.screen == "MemoryBrowserScreen":
            memories = source._t("acme")["memories"]
            memories.append({**memories[0], "id": "m-new"})
        elif case.screen == "PurgeScreen":
            items = source._t("beta")["purge"]["items"]
            del items[1:]
        elif case.screen == "ConfirmationsScreen":
            source._t("beta")["confirmations"].pop()


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.screen}-{c.key}")
def test_each_key_of_each_screen(
    case: Key, build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        welcome = case.screen == "WelcomeScreen"
        app = build_app(fixture_source, show_welcome=welcome)
        async with app.run_test(size=SIZE) as pilot:
            if welcome:
                await screen_is(pilot, "WelcomeScreen")
            else:
                await REACH[case.screen](pilot, fixture_source)
            fixture_source.actions.clear()
            if case.key in ("r", "ctrl+r"):
                _change_the_data(case, fixture_source)
            await pilot.press(*case.before, case.key)
            await wait_for(pilot, lambda: case.expect(app, fixture_source), case.key)
            assert app._exception is None
        assert app._exception is None

    run(scenario())


@pytest.mark.parametrize("case", APP_CASES, ids=lambda c: c.key)
def test_each_app_key(
    case: Key, build_app: Build, fixture_source: FixtureSource, tmp_path: Path
) -> None:
    settings = tmp_path / "ui-slow.yaml"
    settings.write_text("refresh_s: 60\n", encoding="utf-8")  # only ctrl+r polls again

    async def scenario() -> None:
        app = build_app(fixture_source, settings_file=settings)
        async with app.run_test(size=SIZE) as pilot:
            await _acme(pilot)
            app.first_snapshot = app.snapshot  # type: ignore[attr-defined]
            await pilot.press(case.key)
            await wait_for(pilot, lambda: case.expect(app, fixture_source), case.key)
        assert app._exception is None

    run(scenario())


PALETTE_EXPECT: dict[str, Probe] = {
    "spawn": did("spawn", "acme"),
    "attach": did("attach", "acme"),
    "stop": on("AskYesNo"),
    "restart": did("restart", "acme"),
    "detail": on("TenantDetailScreen"),
    "debt": on("DebtScreen"),
    "review": on("ReviewScreen"),
    "purge": on("PurgeScreen"),
    "confirmations": on("ConfirmationsScreen"),
    "bus": on("BusScreen"),
    "recall": on("RecallScreen"),
    "memories": on("MemoryBrowserScreen"),
    "overview": ON_ROOT,
    "setup": lambda app, s: ["setup", "--tenant", "acme"] in app.ran,  # type: ignore[attr-defined]
    "add_tenant": lambda app, s: ["setup"] in app.ran,  # type: ignore[attr-defined]
    "demo": lambda app, s: ["demo"] in app.ran,  # type: ignore[attr-defined]
    "filter_state": lambda app, s: app.screen_stack[1].state_filter,  # type: ignore[attr-defined]
    "toggle_needs_me": lambda app, s: app.screen_stack[1].needs_me,  # type: ignore[attr-defined]
    "cycle_sort": lambda app, s: app.screen_stack[1].sort_key != "tenant",  # type: ignore[attr-defined]
    "refresh": lambda app, s: app.snapshot is not app.first_snapshot,  # type: ignore[attr-defined]
    "help": on("HelpScreen"),
}


def test_every_palette_entry_has_a_case() -> None:
    assert set(PALETTE_EXPECT) == {action for action, _, _ in PALETTE}


@pytest.mark.parametrize(("action", "title"), [(a, t) for a, t, _ in PALETTE], ids=lambda x: x)
def test_each_palette_entry(
    action: str, title: str, build_app: Build, fixture_source: FixtureSource, tmp_path: Path
) -> None:
    settings = tmp_path / "ui-slow.yaml"
    settings.write_text("refresh_s: 60\n", encoding="utf-8")

    async def scenario() -> None:
        app = build_app(fixture_source, settings_file=settings)
        ran: list[list[str]] = []

        def suspended(argv: list[str]) -> int:
            # A terminal hand-over (the wizard, the demo) cannot run headless: record its argv.
            ran.append(list(argv[3:]))  # after `python -m nika_tui`
            return 0

        app.run_suspended = suspended  # type: ignore[method-assign,assignment]
        app.ran = ran  # type: ignore[attr-defined]
        async with app.run_test(size=SIZE) as pilot:
            await _acme(pilot)
            if action == "overview":
                await pilot.press("b")
                await screen_is(pilot, "BusScreen")
            app.first_snapshot = app.snapshot  # type: ignore[attr-defined]
            fixture_source.actions.clear()
            await pilot.press("ctrl+p")
            await screen_is(pilot, "CommandPalette")
            await pilot.press(*title)
            await pilot.pause(0.3)
            await pilot.press("enter")
            await wait_for(pilot, lambda: PALETTE_EXPECT[action](app, fixture_source), title)
        assert app._exception is None

    run(scenario())
