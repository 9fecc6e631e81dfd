"""The app's actions that open a screen (keys, palette entries and screens share them).

A base class of :class:`nika_tui.ui.app.NikaDashboard`, kept apart so the app module holds the
lifecycle, the poll and the kernel actions, and this one the navigation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.app import App


class ScreenNavigation(App[None]):
    """Open the dashboard's screens for the selected tenant."""

    if TYPE_CHECKING:
        selected_tenant: str | None

        def _tenant(self) -> str | None: ...

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

    def action_help(self) -> None:
        """Show the help screen."""
        from nika_tui.ui.screens.help import HelpScreen

        self.push_screen(HelpScreen())
