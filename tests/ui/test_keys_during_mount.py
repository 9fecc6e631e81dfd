"""Keys typed while a screen mounts, or after `q`, never crash the dashboard (issue 17).

A once-seen crash: keys typed ahead (a shell command typed while the dashboard was quitting)
opened ConfirmationsScreen in an app already shutting down; its ``on_mount`` found no
children. Typing ahead of a screen change could also stack a second screen of one kind, whose
fixed id raised ``DuplicateIds``. Keys are posted in one burst here, as a fast typist or a
paste delivers them, without waiting for any screen to mount between them.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual import events

from nika_tui.dashboard.fixture_source import FixtureSource
from nika_tui.ui.app import NikaDashboard
from tests.ui.conftest import SIZE
from tests.ui.pilot_helpers import ready, run, screen_is, wait_for

Build = Callable[..., NikaDashboard]


def _burst(app: NikaDashboard, keys: list[str]) -> None:
    for key in keys:
        app.post_message(events.Key(key, key if len(key) == 1 else None))


BURSTS = {
    "every tenant key from the detail": ["enter", *"smdvpcb"],
    "confirmations, then its keys": ["c", "a", "y", "x", "t", "r", "escape"],
    "memories, then its keys": [*"mrutvlT", "escape"],
    "review, then its keys": [*"vakAKs", "space", "m"],
    "purge, then its keys": [*"pcr"],
    "bus, then open the memory": ["b", "m"],
    "recall, then its keys": ["slash", "ctrl+o", "ctrl+y", "ctrl+n"],
    "debt, then its keys": [*"drm"],
    "help open and closed": ["question_mark", "escape", "question_mark"],
    "stop, then yes": ["x", "y"],
    "confirmations again and again": [*"cacacaca"],
}


@pytest.mark.parametrize("first_frame", [False, True], ids=["before data", "after data"])
@pytest.mark.parametrize("keys", BURSTS.values(), ids=BURSTS.keys())
def test_keys_typed_while_screens_mount_do_not_crash(
    keys: list[str], first_frame: bool, build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        app = build_app(fixture_source)
        async with app.run_test(size=SIZE) as pilot:
            if first_frame:
                await ready(pilot)
            _burst(app, keys)
            _burst(app, keys)  # the second burst lands on whatever the first one opened
            await wait_for(pilot, lambda: app.snapshot is not None, "the app alive")
            await pilot.pause()
            assert app.is_running
        assert app._exception is None

    run(scenario())


def test_a_command_typed_after_q_does_not_crash_the_leaving_app(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        app = build_app(fixture_source)
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            _burst(app, ["q", *"clear", "enter"])  # the newcomer test's next shell command
            await wait_for(pilot, lambda: app._exit, "exit")
        assert app._exception is None
        assert not any(type(s).__name__ == "ConfirmationsScreen" for s in app.screen_stack)

    run(scenario())


def test_the_same_screen_twice_from_the_palette(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            for action in ("memories", "memories", "debt", "debt", "confirmations"):
                app.run_palette_action(action, "acme")
            await screen_is(pilot, "ConfirmationsScreen")
            names = [type(s).__name__ for s in app.screen_stack]
            assert names.count("MemoryBrowserScreen") == 2 and names.count("DebtScreen") == 2

    run(scenario())
