"""The app's actions that open a screen (keys, palette entries and screens share them).

A base class of :class:`nika_tui.ui.app.NikaDashboard`, kept apart so the app module holds the
lifecycle, the poll and the kernel actions, and this one the navigation.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from textual.app import App

from nika_tui.dashboard.memory_views import MemoryFilter


class ScreenNavigation(App[None]):
    """Open the dashboard's screens for the selected tenant."""

    if TYPE_CHECKING:
        selected_tenant: str | None

        preview: bool

        def _tenant(self) -> str | None: ...
        def request_refresh(self) -> None: ...
        def run_suspended(self, argv: Sequence[str]) -> int | None: ...

    def _open(self, factory: Callable[[str], Any]) -> None:
        if (t := self._tenant()) is not None:
            self.push_screen(factory(t))

    def action_detail(self) -> None:
        """Open the tenant detail screen."""
        from nika_tui.ui.screens.tenant_detail import TenantDetailScreen

        self._open(TenantDetailScreen)

    def action_debt(self) -> None:
        """Open the memory-debt screen."""
        from nika_tui.ui.screens.debt import DebtScreen

        self._open(DebtScreen)

    def action_review(self) -> None:
        """Open the review queue."""
        from nika_tui.ui.screens.review import ReviewScreen

        self._open(ReviewScreen)

    def action_purge(self) -> None:
        """Open the purge confirmations."""
        from nika_tui.ui.screens.purge import PurgeScreen

        self._open(PurgeScreen)

    def action_confirmations(self) -> None:
        """Open the confirmations of the selected tenant (every tenant when none is selected)."""
        from nika_tui.ui.screens.confirmations import ConfirmationsScreen

        self.push_screen(ConfirmationsScreen(self.selected_tenant))

    def action_recall(self) -> None:
        """Open the recall search."""
        from nika_tui.ui.screens.recall import RecallScreen

        self._open(RecallScreen)

    def action_bus(self) -> None:
        """Open the bus tail (filtered on the selected tenant when there is one)."""
        from nika_tui.ui.screens.bus import BusScreen

        self.push_screen(BusScreen(self.selected_tenant or ""))

    def action_memories(self) -> None:
        """Open the memory browser of the selected tenant."""
        if (t := self._tenant()) is not None:
            self.open_memories(t, MemoryFilter())

    def open_memories(self, tenant_id: str, flt: MemoryFilter) -> None:
        """Open the memory browser on ``tenant_id`` with ``flt`` (a bus line, a pair, a hit)."""
        from nika_tui.ui.screens.memories import MemoryBrowserScreen

        self.push_screen(MemoryBrowserScreen(tenant_id, flt))

    def action_overview(self) -> None:
        """Back to the overview (the root screen)."""
        while len(self.screen_stack) > 2:
            self.pop_screen()

    def action_help(self) -> None:
        """Show the keys of the screen in front, then the general help."""
        from nika_tui.ui.screens.help import HelpScreen

        self.push_screen(HelpScreen(self.screen))

    def _nika(self, *args: str) -> None:
        """Run a ``nika`` command in this terminal (the wizard, the demo), then come back."""
        if self.preview:
            self.notify("preview: nothing runs here; run `nika` for your tenants", title="preview")
            return
        code = self.run_suspended([sys.executable, "-m", "nika_tui", *args])
        if code not in (None, 0):
            self.notify(f"`nika {' '.join(args)}` exited with {code}", severity="warning")
        self.request_refresh()

    def action_setup(self) -> None:
        """The wizard on the selected tenant (or a new one when none is selected)."""
        t = self.selected_tenant
        self._nika("setup", *(["--tenant", t] if t else []))

    def action_add_tenant(self) -> None:
        """The wizard, for a new tenant."""
        self._nika("setup")

    def action_demo(self) -> None:
        """``nika demo``: a scripted agent fills a demo tenant."""
        self._nika("demo")
