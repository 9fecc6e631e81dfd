"""Memory debt: every metric vs its threshold, its chart over the audits, the proposed action."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static

from nika_tui.dashboard.model import DebtView
from nika_tui.ui.screens.base import DashboardScreen
from nika_tui.ui.widgets.metric_row import MetricRow

DEBT_EVERY_S = 5.0


class DebtScreen(DashboardScreen):
    """One tenant's memory-debt metrics."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "run_audit", "Run audit now"),
        Binding("m", "app.memories", "Memories"),
    ]
    HELP_TITLE = "Memory debt"
    HELP = """Each metric of the latest audit against its threshold, the action it proposes and
whether the tenant's auto-actions would apply it; under it, the metric over the recent audits
(time on the x axis) with its threshold as a red line. A metric no audit measured says
*no data*. `r` runs an audit now; `m` opens the memories themselves."""

    class DebtReady(Message):
        """A debt read (or an audit run) answered."""

        def __init__(self, debt: DebtView, error: str = "") -> None:
            super().__init__()
            self.debt = debt
            self.error = error

    def __init__(self, tenant_id: str) -> None:
        super().__init__()
        self.tenant_id = tenant_id
        self._shown: DebtView | None = None

    def compose_body(self) -> ComposeResult:
        yield Static(f"{self.tenant_id}: memory debt", id="debt-title")
        yield VerticalScroll(id="metrics")

    def on_mount(self) -> None:
        super().on_mount()
        self.sub_title = f"{self.tenant_id} · debt"
        self._poll()

    @work(thread=True, exclusive=True, exit_on_error=False, group="debt")
    def _poll(self, run: bool = False) -> None:
        source = self.dashboard.source
        try:
            debt = source.run_audit(self.tenant_id) if run else source.debt(self.tenant_id)
        except Exception as exc:  # noqa: BLE001 - UI edge
            self.post_message(self.DebtReady(source.debt(self.tenant_id), str(exc)))
            return
        self.post_message(self.DebtReady(debt))

    def action_run_audit(self) -> None:
        """Run the audit now (through the memory service)."""
        self.notify(f"auditing {self.tenant_id}…", title="debt")
        self._poll(run=True)

    async def on_debt_screen_debt_ready(self, message: DebtReady) -> None:
        if message.error:
            self.notify(message.error, title="audit failed", severity="error")
        await self.show_debt(message.debt)
        self.reschedule("debt", DEBT_EVERY_S, self._poll)

    async def show_debt(self, debt: DebtView) -> None:
        """Render the metrics (rebuilt only when they changed)."""
        title = Text(f"{self.tenant_id}: memory debt", style="bold")
        if debt.at is not None:
            title.append(f" · audit of {debt.at:%Y-%m-%d %H:%M} UTC", style="dim")
        if debt.unreadable:
            title.append(" · latest report unreadable", style="red")
        elif not debt.metrics:
            title.append(" · no audit yet (press r)", style="dim")
        if debt.ingest_paused:
            title.append(f"\nbulk ingestion paused: {debt.ingest_paused}", style="bold red")
        if debt.pause_waived:
            title.append(
                "\ncritical, yet bulk ingestion is not paused for it (the action you approved "
                f"changed nothing): {'; '.join(debt.pause_waived)}",
                style="yellow",
            )
        self.query_one("#debt-title", Static).update(title)
        if debt == self._shown:
            return
        self._shown = debt
        box = self.query_one("#metrics", VerticalScroll)
        await box.remove_children()
        await box.mount_all(MetricRow(m) for m in debt.metrics)
