"""What every dashboard screen shares: header, status bar, footer, and the snapshot hook.

Also the keys every tenant screen shares (:data:`TENANT_BINDINGS`: the overview and the tenant
detail answer the same letters), the PREVIEW banner of the offline preview, and ``escape``
shown only where there is somewhere to go back to.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, cast

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Static

from nika_tui.dashboard.model import Snapshot
from nika_tui.ui.host import DashboardHost
from nika_tui.ui.widgets.header import NikaHeader
from nika_tui.ui.widgets.key_bar import KeyBar
from nika_tui.ui.widgets.status_bar import StatusBar

TENANT_BINDINGS: list[BindingType] = [
    Binding("s", "app.spawn", "Spawn"),
    Binding("a", "app.attach", "Attach"),
    Binding("x", "app.stop", "Stop"),
    Binding("R", "app.restart", "Restart"),
    Binding("m", "app.memories", "Memories"),
    Binding("d", "app.debt", "Debt"),
    Binding("v", "app.review", "Review"),
    Binding("p", "app.purge", "Purge"),
    Binding("c", "app.confirmations", "Confirm"),
    Binding("b", "app.bus", "Bus"),
    Binding("slash", "app.recall", "Recall"),
]
"""The selected tenant's actions, the same letters on the overview and the tenant detail."""

PREVIEW_BANNER = "PREVIEW · sample data · no service, no kernel: actions are refused, nothing runs"


class DashboardScreen(Screen[None]):
    """A full screen with the status bar; subclasses compose their body in ``compose_body``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
    ]

    def __init__(self, id: str | None = None) -> None:
        # Screens take no fixed id: the app registers every stacked screen as a child, and a
        # second screen of one kind (the palette's "Memory browser" over the memory browser, keys
        # typed ahead of a screen change) raised DuplicateIds and crashed the app.
        super().__init__(id=id)
        self._poll_timers: dict[str, Timer] = {}

    @property
    def dashboard(self) -> DashboardHost:
        """The app, as the narrow protocol screens may use (not ``app.py``: no import cycle)."""
        return cast(DashboardHost, self.app)

    HELP_TITLE: ClassVar[str] = ""
    """The help screen's title for this screen (``?``)."""
    HELP: ClassVar[str] = ""
    """What this screen shows, in a paragraph of Markdown, under its keys in the help."""

    def compose(self) -> ComposeResult:
        yield NikaHeader()
        banner = Static(PREVIEW_BANNER, classes="preview-banner")
        banner.display = self.dashboard.preview  # the welcome's preview turns it on later
        yield banner
        yield from self.compose_body()
        yield StatusBar()
        yield KeyBar()

    def compose_body(self) -> ComposeResult:
        """The screen's own widgets."""
        yield from ()

    def on_mount(self) -> None:
        if self.dashboard.snapshot is not None:
            self.show_snapshot(self.dashboard.snapshot)

    def show_snapshot(self, snapshot: Snapshot) -> None:
        """A new overview snapshot arrived (status bar; subclasses add their part)."""
        if not self.query(StatusBar):
            # Not composed: a screen pushed by a key typed while the app was already exiting
            # is mounted without its children (the once-seen ConfirmationsScreen crash).
            return
        self.query_one(".preview-banner").display = self.dashboard.preview
        bar = self.query_one(StatusBar)
        bar.error = ""
        bar.snapshot = snapshot
        self.on_snapshot(snapshot)

    def on_snapshot(self, snapshot: Snapshot) -> None:
        """Hook for subclasses."""

    def show_source_error(self, error: str) -> None:
        """The source failed: say so; the last data stays on screen."""
        self.query_one(StatusBar).error = error

    def reschedule(self, name: str, delay: float, poll: Callable[[], Any]) -> None:
        """Run ``poll`` once after ``delay``; replaces any pending run of the same name.

        One pending timer per source: a poll that finished schedules the next one, and an
        extra refresh (after an action) never doubles the polling rate.
        """
        timers = self._poll_timers
        if name in timers:
            timers[name].stop()
        timers[name] = self.set_timer(delay, poll)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide ``escape``'s "Back" on the root screen: there is nothing to go back to."""
        if action != "back":
            return True
        stack = self.app.screen_stack
        # The root is the first screen above Textual's default one (the overview).
        return not (len(stack) > 1 and stack[1] is self)

    def action_back(self) -> None:
        """Back to the previous screen."""
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
