"""The command palette's entries: every dashboard action, and per-tenant variants.

The provider asks the app (typed as :class:`PaletteHost`, not ``app.py``: no import cycle) for
the tenants of its latest snapshot and runs an entry through ``run_palette_action``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Protocol, runtime_checkable

from textual.command import DiscoveryHit, Hit, Hits, Provider

from nika_tui.dashboard.model import Snapshot


@runtime_checkable
class PaletteHost(Protocol):
    """What the palette needs of the app."""

    @property
    def snapshot(self) -> Snapshot | None:
        """The latest overview snapshot."""
        ...

    def run_palette_action(self, action: str, tenant: str | None) -> None:
        """Run ``action_{action}``, for ``tenant`` when given."""


# (action, title, help): every action reachable from the palette.
PALETTE: tuple[tuple[str, str, str], ...] = (
    ("spawn", "Spawn kernel", "start the selected tenant's agent in its tmux kernel"),
    (
        "attach",
        "Attach to kernel",
        "suspend the dashboard and attach to the kernel (detach to return)",
    ),
    ("stop", "Stop kernel", "stop the selected tenant's kernel"),
    ("restart", "Restart kernel", "restart the selected tenant's kernel"),
    ("detail", "Tenant detail", "live pane, context history, memory counts, strategies"),
    ("debt", "Memory debt", "metrics against thresholds; run the audit"),
    ("review", "Review queue", "UNCERTAIN pairs: approve-replace, keep both, skip"),
    ("purge", "Purge confirmations", "the purge plan, dry-run count, confirm by typing the id"),
    ("confirmations", "Confirmations", "escalated actions waiting for you: approve or reject"),
    ("bus", "Bus / log tail", "the JSONL bus, live, filterable"),
    ("recall", "Recall", "search the selected tenant's memory"),
    ("memories", "Memory browser", "every memory: status, valid time, source, chain; timeline"),
    ("overview", "Overview", "back to every tenant at a glance"),
    ("setup", "Set up the selected tenant (wizard)", "edit its settings with `nika setup`"),
    ("add_tenant", "Add a tenant (wizard)", "create a tenant with `nika setup`"),
    ("demo", "Try the demo tenant", "`nika demo`: a scripted agent fills a demo tenant"),
    ("filter_state", "Filter by state", "cycle the kernel-state filter of the overview"),
    ("toggle_needs_me", "Filter: needs me", "show only tenants waiting for you"),
    ("cycle_sort", "Sort overview", "cycle the overview's sort order"),
    ("refresh", "Refresh now", "poll every source now"),
    ("help", "Help", "keys and screens"),
)

PER_TENANT = (
    "attach",
    "detail",
    "spawn",
    "review",
    "purge",
    "debt",
    "confirmations",
    "memories",
    "recall",
    "bus",
    "setup",
)
"""Actions also offered once per tenant ("Memory browser: acme")."""


class DashboardCommands(Provider):
    """Command-palette entries: every dashboard action, plus per-tenant variants."""

    def _entries(self) -> list[tuple[str, str, Callable[[], Any]]]:
        app = self.app
        assert isinstance(app, PaletteHost)
        out: list[tuple[str, str, Callable[[], Any]]] = [
            (title, text, partial(app.run_palette_action, action, None))
            for action, title, text in PALETTE
        ]
        tenants = [r.tenant_id for r in app.snapshot.tenants] if app.snapshot else []
        for tenant in tenants:
            for action in PER_TENANT:
                title = dict((a, t) for a, t, _ in PALETTE)[action]
                out.append(
                    (
                        f"{title}: {tenant}",
                        f"{action} for {tenant}",
                        partial(app.run_palette_action, action, tenant),
                    )
                )
        return out

    async def discover(self) -> Hits:
        """Shown before typing: the generic actions."""
        for title, text, callback in self._entries()[: len(PALETTE)]:
            yield DiscoveryHit(title, callback, help=text)

    async def search(self, query: str) -> Hits:
        """Fuzzy match over every entry."""
        matcher = self.matcher(query)
        for title, text, callback in self._entries():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=text)
