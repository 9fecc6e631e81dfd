"""Help: the keys of the screen in front (read from its live bindings), then what it shows.

The key table is built from the screen's active bindings, so it cannot drift from what the
keys do; each screen may add a paragraph (its ``HELP`` class attribute).
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Markdown

GENERAL = """\
`ctrl+p` opens the command palette: every screen and action, per tenant too (memory browser,
setup, add a tenant, demo…); *Theme* changes the theme. `q` quits: the memory service and the
kernels keep running (`nika down` stops the service, `nika kernel stop T` a kernel).

When Redis or the memory service is down the status bar says so and the dashboard keeps
polling: it recovers by itself once they are back (`nika up`).
"""


def keys_table(screen: Screen[object]) -> str:
    """A Markdown table of the screen's shown bindings (app-wide ones included): the keys the
    key bar offers, each with what it does."""
    rows: list[str] = []
    seen: set[str] = set()
    for key, (_node, binding, enabled, _tip) in screen.active_bindings.items():
        # Shown bindings only: the focused table's cursor keys would bury the screen's own.
        if not binding.show or not binding.description or binding.action in seen:
            continue
        seen.add(binding.action)
        shown = screen.app.get_key_display(binding).replace("|", "\\|")
        note = "" if enabled else " *(not now)*"
        rows.append(f"| `{shown}` | {binding.description}{note} |")
        del key
    return "| key | action |\n|---|---|\n" + "\n".join(rows)


def help_text(screen: Screen[object]) -> str:
    """The whole help of ``screen``: title, its keys, its paragraph, the general part."""
    title = str(getattr(screen, "HELP_TITLE", "") or type(screen).__name__)
    own = str(getattr(screen, "HELP", "") or "")
    return f"# {title}\n\n{keys_table(screen)}\n\n{own}\n\n{GENERAL}"


class HelpScreen(ModalScreen[None]):
    """The keys of the screen it was opened from."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("question_mark", "close", "Close", show=False),
    ]

    def __init__(self, screen: Screen[object]) -> None:
        super().__init__()
        self.text = help_text(screen)
        """The Markdown shown (built when opened: the bindings of that moment)."""

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Markdown(self.text)

    def action_close(self) -> None:
        """Close this help, and only it.

        ``app.pop_screen`` popped whatever was on top: two close keys typed fast (``?`` and
        ``escape``) popped the help and then the overview, leaving no screen (a crash).
        """
        if self.is_current:
            self.dismiss()
