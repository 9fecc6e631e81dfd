"""KeyBar: the active bindings on one clickable line, compact when the terminal is narrow."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType

from nika_tui.ui.widgets.key_bar import KeyBar
from tests.ui.pilot_helpers import ready, run


class KeysApp(App[None]):
    """A key bar under three bindings, one hidden, one disabled by check_action."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "spawn", "Spawn"),
        Binding("x", "stop", "Stop"),
        Binding("h", "hidden", "Hidden", show=False),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.done: list[str] = []

    def compose(self) -> ComposeResult:
        yield KeyBar()

    def action_spawn(self) -> None:
        self.done.append("spawn")

    def action_stop(self) -> None:
        self.done.append("stop")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return None if action == "stop" else True  # None: shown, but disabled


def _line(app: KeysApp) -> str:
    return app.query_one(KeyBar).render().plain  # type: ignore[union-attr]


def test_shows_the_active_bindings_and_a_click_presses_the_key() -> None:
    async def scenario() -> None:
        app = KeysApp()
        async with app.run_test(size=(80, 3)) as pilot:
            await pilot.pause()
            line = _line(app)
            assert " s  Spawn " in line and " x  Stop " in line and " q  Quit " in line
            assert "Hidden" not in line
            assert line.rstrip().endswith("palette")  # the command palette, on the right
            await pilot.click(KeyBar, offset=(2, 0))  # on "s"
            await pilot.pause()
            assert app.done == ["spawn"]

    run(scenario())


def test_a_narrow_terminal_gets_the_compact_line() -> None:
    async def scenario() -> None:
        app = KeysApp()
        async with app.run_test(size=(40, 3)) as pilot:
            await pilot.pause()
            line = _line(app)
            assert "s Spawn" in line and "q Quit" in line
            assert " s  Spawn " not in line

    run(scenario())


def test_at_80_columns_the_overview_still_shows_quit_and_help(
    build_app: Callable[..., Any], fixture_source: Any
) -> None:
    """The overview's keys do not fit 80 columns: `…` stands for the rest, `?` lists them."""

    async def scenario() -> None:
        app = build_app(fixture_source)
        async with app.run_test(size=(80, 24)) as pilot:
            await ready(pilot)
            line = app.screen.query_one(KeyBar).render().plain
            assert line.startswith("s Spawn") and "…" in line
            assert "q Quit ? Help" in line and line.rstrip().endswith("palette")
            assert len(line) <= 80

    run(scenario())
