"""Purge confirmations: the plan (replacements, blocking references, dry-run count) and an
explicit confirmation by typing the tenant id before anything is applied."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Label, Static

from nika_tui.dashboard.model import PurgePlanView, PurgeResult
from nika_tui.ui.screens.base import DashboardScreen


class ConfirmPurge(ModalScreen[str | None]):
    """Type the tenant id to confirm; a wrong id is refused and the dialog stays open."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, tenant_id: str, count: int) -> None:
        super().__init__()
        self.tenant_id = tenant_id
        self.count = count

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Label(
                f"Purge {self.count} item(s) from {self.tenant_id}'s live index? They are "
                "archived first; blocked items are skipped."
            )
            yield Label(f"Type [b]{self.tenant_id}[/b] to confirm, escape to cancel.")
            yield Input(placeholder=self.tenant_id, id="confirm-input")
            yield Static("", id="confirm-error")

    @on(Input.Submitted, "#confirm-input")
    def _submitted(self, event: Input.Submitted) -> None:
        if event.value.strip() != self.tenant_id:
            self.query_one("#confirm-error", Static).update(
                Text(
                    f"{event.value.strip()!r} is not {self.tenant_id!r}: nothing purged",
                    style="bold red",
                )
            )
            event.input.value = ""
            return
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        """Close without purging."""
        self.dismiss(None)


class PurgeScreen(DashboardScreen):
    """One tenant's purge plan."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "confirm", "Apply (confirm)"),
        Binding("r", "reload", "Re-plan"),
    ]

    class PlanReady(Message):
        """The plan (or the apply result) came back."""

        def __init__(
            self, plan: PurgePlanView | None, result: PurgeResult | None = None, error: str = ""
        ) -> None:
            super().__init__()
            self.plan = plan
            self.result = result
            self.error = error

    def __init__(self, tenant_id: str) -> None:
        super().__init__()
        self.tenant_id = tenant_id
        self.plan: PurgePlanView | None = None

    def compose_body(self) -> ComposeResult:
        yield Static(f"{self.tenant_id}: purge plan", id="purge-title")
        table: DataTable[Text | str] = DataTable(id="purge-items", cursor_type="row")
        table.add_columns("Memory", "Text", "Replaced by", "Reason", "Blocked by")
        yield table

    def on_mount(self) -> None:
        super().on_mount()
        self.sub_title = f"{self.tenant_id} · purge"
        self._plan()

    def action_reload(self) -> None:
        """Ask for a fresh plan."""
        self._plan()

    @work(thread=True, exclusive=True, exit_on_error=False, group="purge")
    def _plan(self) -> None:
        try:
            self.post_message(self.PlanReady(self.dashboard.source.purge_plan(self.tenant_id)))
        except Exception as exc:  # noqa: BLE001 - UI edge
            self.post_message(self.PlanReady(None, error=str(exc)))

    @work(thread=True, exclusive=True, exit_on_error=False, group="purge")
    def _apply(self, typed: str) -> None:
        source = self.dashboard.source
        try:
            result = source.apply_purge(self.tenant_id, typed)
        except Exception as exc:  # noqa: BLE001 - UI edge: the refusal is shown
            self.post_message(self.PlanReady(self.plan, error=str(exc)))
            return
        try:
            plan: PurgePlanView | None = source.purge_plan(self.tenant_id)
        except Exception:  # noqa: BLE001 - the purge itself succeeded
            plan = None
        self.post_message(self.PlanReady(plan, result))

    def on_purge_screen_plan_ready(self, message: PlanReady) -> None:
        if message.error:
            self.notify(message.error, title="purge", severity="error")
        if message.result is not None:
            r = message.result
            self.notify(
                f"removed {r.removed}, skipped {r.skipped} (blocked)", title="purge applied"
            )
            self.dashboard.request_refresh()
        if message.plan is not None:
            self.show_plan(message.plan)
        elif message.error and self.plan is None:
            self.query_one("#purge-title", Static).update(
                Text(f"{self.tenant_id}: no plan — {message.error}", style="yellow")
            )

    def show_plan(self, plan: PurgePlanView) -> None:
        """Render the plan."""
        self.plan = plan
        title = Text(f"{self.tenant_id}: purge plan · {len(plan.items)} item(s)", style="bold")
        title.append(f" · {plan.blocked_count} blocked by active references", style="yellow")
        title.append(f" · dry run: {plan.dry_run_count} would be removed", style="cyan")
        title.append(
            "\nNo purge without replacement: each item's replacement is indexed first.", style="dim"
        )
        self.query_one("#purge-title", Static).update(title)
        table = self.query_one("#purge-items", DataTable)
        table.clear()
        for it in plan.items:
            blocked = (
                Text(", ".join(it.blocked_by), style="yellow")
                if it.blocked_by
                else Text("—", style="dim")
            )
            replaced = f"{it.replacement_id}: {it.replacement_text}" if it.replacement_id else "—"
            table.add_row(it.memory_id, it.text, replaced, it.reason, blocked)

    def action_confirm(self) -> None:
        """Open the confirmation dialog (type the tenant id)."""
        if self.plan is None or not self.plan.dry_run_count:
            self.notify("nothing to purge", severity="warning")
            return

        def done(typed: str | None) -> None:
            if typed is not None:
                self._apply(typed)

        self.app.push_screen(ConfirmPurge(self.tenant_id, self.plan.dry_run_count), done)
