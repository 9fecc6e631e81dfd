"""First run with no tenant: offer the wizard, the demo, or a preview with sample data."""

from __future__ import annotations

import sys
from typing import ClassVar, cast

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Center, Vertical
from textual.screen import Screen
from textual.widgets import Button, Markdown

from nika_tui.ui.host import DashboardHost
from nika_tui.ui.widgets.key_bar import KeyBar

WELCOME = """\
# Welcome to nika-os

One shared, current memory for every AI coding agent of a tenant — and this console to watch
them: which kernel is busy or waiting, how full each context is against the 61% line, how much
memory debt builds up, and what needs your decision.

No tenant is configured yet.
"""


class WelcomeScreen(Screen[None]):
    """Shown instead of an empty overview."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("q", "app.quit", "Quit")]
    HELP_TITLE = "Welcome"
    HELP = """No tenant is configured yet. The buttons (`tab` / arrows, `enter`): the wizard
creates a tenant (`nika setup`), the demo fills a scripted demo tenant (`nika demo`), the
preview shows the dashboard on sample data (nothing runs there). `q` quits."""

    def compose(self) -> ComposeResult:
        with Center(), Vertical(id="welcome-box"):
            yield Markdown(WELCOME)
            yield Button("Set up a tenant (wizard)", id="wizard", variant="primary")
            yield Button("Try the demo tenant", id="demo")
            yield Button("Preview with sample data", id="preview")
            yield Button("Quit", id="quit", variant="error")
        yield KeyBar()

    @property
    def dashboard(self) -> DashboardHost:
        """The app, as the narrow protocol screens may use (not ``app.py``: no import cycle)."""
        return cast(DashboardHost, self.app)

    def _run(self, *args: str) -> None:
        code = self.dashboard.run_suspended([sys.executable, "-m", "nika_tui", *args])
        if self.dashboard.tenants_configured():
            self.dismiss()
            self.dashboard.request_refresh()
        elif code not in (None, 0):
            self.notify(f"`nika {' '.join(args)}` exited with {code}", severity="warning")

    @on(Button.Pressed, "#wizard")
    def _wizard(self) -> None:
        self._run("setup")

    @on(Button.Pressed, "#demo")
    def _demo(self) -> None:
        self._run("demo")

    @on(Button.Pressed, "#preview")
    def _preview(self) -> None:
        self.dashboard.preview_sample_data()
        self.dismiss()

    @on(Button.Pressed, "#quit")
    def _quit(self) -> None:
        self.app.exit()
