"""What a screen may ask of the app: a narrow protocol, so screens never import ``app.py``.

``app.py`` imports its screens (to push them); if screens imported ``app.py`` back to type
``self.app``, the two would form an import cycle. Screens type the app as :class:`DashboardHost`
instead, and ``NikaDashboard`` satisfies it structurally (checked by mypy in ``app.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol

from nika_tui.dashboard.memory_views import MemoryFilter
from nika_tui.dashboard.model import DashboardSource, Snapshot

Clock = Callable[[], datetime]
"""``now`` for snapshots: the wall clock, or a fixed one in tests and the sample-data preview."""


class DashboardHost(Protocol):
    """The app as its screens see it: the data source, the latest snapshot, a few actions."""

    selected_tenant: str | None
    """The tenant under the overview's cursor (set by the overview): each tenant action's target."""

    @property
    def preview(self) -> bool:
        """True in the offline preview (sample data): screens say so, actions are refused."""
        ...

    @property
    def source(self) -> DashboardSource:
        """Where every read and action goes (the live Redis source or the fixture)."""
        ...

    @property
    def snapshot(self) -> Snapshot | None:
        """The latest overview snapshot (``None`` before the first poll answers)."""
        ...

    @property
    def clock(self) -> Clock:
        """``now`` for snapshots (the sample-data preview has its own fixed clock)."""
        ...

    @property
    def warmed_up(self) -> bool:
        """Whether :meth:`warm_up_once` ran."""
        ...

    def warm_up_once(self) -> None:
        """Load what the first frame did not need (the kernel manager), once."""

    def request_refresh(self) -> None:
        """Poll now (or right after the poll in flight); never two polls at once."""

    def run_suspended(self, argv: Sequence[str]) -> int | None:
        """Give the terminal to ``argv`` and take it back; ``None`` when it could not run."""

    def tenants_configured(self) -> bool:
        """Whether any tenant config exists (the welcome screen closes once one does)."""

    def preview_sample_data(self) -> None:
        """Show the bundled sample data instead of the live stores."""

    def action_detail(self) -> None:
        """Open the tenant detail screen for the selected tenant."""

    def open_memories(self, tenant_id: str, flt: MemoryFilter) -> None:
        """Open the memory browser on ``tenant_id`` with ``flt``."""
