"""The status bar: health of Redis and the memory service, tenant counts, last refresh."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from nika_tui.dashboard.model import Snapshot


class StatusBar(Widget):
    """One line above the footer; says plainly when a dependency is down.

    A fixed one-line widget that repaints itself (no layout pass) when its reactives change.
    """

    DEFAULT_CSS = """
    StatusBar { height: 1; padding: 0 1; background: $panel; }
    """

    snapshot: reactive[Snapshot | None] = reactive(None)
    """The latest snapshot (``None`` until the first poll answers)."""
    error: reactive[str] = reactive("")
    """Set when the source itself failed (not just a dependency)."""

    def render(self) -> Text:
        """The status line."""
        return self.describe()

    def describe(self) -> Text:
        """The status line's text."""
        text = Text()
        snap = self.snapshot
        if self.error:
            text.append("● ", style="red")
            text.append(f"dashboard source failed: {self.error}  ", style="red")
        if snap is None:
            text.append("connecting…", style="dim")
            return text
        text.append("● ", style="green" if snap.redis_ok else "red")
        text.append("Redis " + ("ok" if snap.redis_ok else "down") + "  ")
        text.append("● ", style="green" if snap.service_ok else "red")
        text.append("service " + ("ok" if snap.service_ok else "down") + "  ")
        needs = sum(1 for r in snap.tenants if r.needs_me)
        text.append(f"{len(snap.tenants)} tenants · {needs} need you · ")
        text.append(f"updated {snap.at:%H:%M:%S}", style="dim")
        for problem in snap.problems:
            text.append(f"  {problem}", style="yellow")
        return text
