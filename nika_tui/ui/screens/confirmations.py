"""Confirmations: the actions the memory service escalated (escalate mode), approved or rejected
with a key.

Reads and decisions go through the App's source (``DashboardSource.confirmations`` /
``resolve_confirmation``). Live, approving does exactly what ``nika confirm approve`` does —
:func:`nika_tui.engine.kernels.confirmations.resolve`: the kernel manager types ``/compact``, the
memory service runs ``rem.run`` / ``purge.apply`` / ``debt.apply`` by RPC (so torch and the
stores never load in the dashboard), and the decision is stored and logged on the bus.
Rejecting only records the decision. Redis or the service being down is shown in the screen.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Input, Label, Static

from nika_tui.dashboard.model import PendingConfirmation
from nika_tui.ui.screens.base import DashboardScreen
from nika_tui.ui.screens.purge import ConfirmPurge

CONFIRMATIONS_EVERY_S = 3.0
PURGE_KIND = "purge.apply"
REPORT_ONLY_KINDS = frozenset({"debt.diagnose_spawn", "debt.audit_judge_prompt"})
"""Kinds whose approval only produces a report: applied without a yes/no question."""


def asks_yes_no(kind: str) -> bool:
    """True when approving ``kind`` changes memory or a kernel's context (a question first)."""
    return kind != PURGE_KIND and kind not in REPORT_ONLY_KINDS


class ApproveAction(ModalScreen[bool]):
    """A short yes/no question before an action that changes memory or a kernel."""

    DEFAULT_CSS = """
    ApproveAction { align: center middle; }
    ApproveAction #approve-buttons { height: auto; margin-top: 1; }
    ApproveAction #approve-buttons > Button { margin-right: 2; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n", "answer(False)", "No"),
        Binding("escape", "answer(False)", "Cancel"),
    ]

    def __init__(self, item: PendingConfirmation) -> None:
        super().__init__()
        self.item = item

    def compose(self) -> ComposeResult:
        v = self.item.view
        with Vertical(id="confirm-box"):
            yield Label(
                Text.assemble(
                    "Approve ", (v.kind, "bold"), " for ", (self.item.tenant_id, "bold"), "?"
                )
            )
            yield Label(Text(v.title))
            with Horizontal(id="approve-buttons"):
                yield Button("Yes, apply (y)", id="approve-yes", variant="error")
                yield Button("No (n)", id="approve-no")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "approve-yes")

    def action_answer(self, yes: bool) -> None:
        """Close with the answer."""
        self.dismiss(yes)


class ConfirmPurgeApproval(ConfirmPurge):
    """The purge dialog (type the tenant id), worded for a queued purge request."""

    def __init__(self, tenant_id: str, title: str) -> None:
        super().__init__(tenant_id, 0)
        self.request_title = title

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Label(
                Text(
                    f"Approve the queued purge of {self.tenant_id}: {self.request_title}. "
                    "Items are archived first; blocked items are skipped."
                )
            )
            yield Label(f"Type [b]{self.tenant_id}[/b] to confirm, escape to cancel.")
            yield Input(placeholder=self.tenant_id, id="confirm-input")
            yield Static("", id="confirm-error")


class ConfirmationsScreen(DashboardScreen):
    """Pending confirmations of one tenant (or all): approve or reject with a key."""

    DEFAULT_CSS = """
    #confirmations-title, #confirmation-detail { height: auto; padding: 0 1; }
    #confirmation-items { height: 1fr; }
    #confirmation-detail { border: round $primary; min-height: 4; }
    #confirmations-error { height: auto; padding: 0 1; color: $error; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "approve", "Approve (apply)"),
        Binding("x", "reject", "Reject"),
        Binding("t", "toggle_scope", "This tenant / all"),
        Binding("r", "reload", "Reload"),
    ]

    class ItemsReady(Message):
        """The pending confirmations were read (``error`` set when the read failed)."""

        def __init__(
            self, scope: str | None, items: Sequence[PendingConfirmation] | None, error: str = ""
        ) -> None:
            super().__init__()
            self.scope = scope
            self.items = None if items is None else list(items)
            self.error = error

    class Resolved(Message):
        """A decision was applied (``error`` empty) or failed."""

        def __init__(self, item: PendingConfirmation, outcome: str, error: str = "") -> None:
            super().__init__()
            self.item = item
            self.outcome = outcome
            self.error = error

    def __init__(self, tenant_id: str | None) -> None:
        """Args:
        tenant_id: The tenant to show; ``None`` shows every tenant.
        """
        super().__init__()
        self.tenant_id = tenant_id
        """The tenant the screen was opened for (``None``: opened for every tenant)."""
        self.all_tenants = tenant_id is None
        """True while every tenant's confirmations are listed."""
        self.items: list[PendingConfirmation] = []
        self.read_error = ""
        """Why the last read failed ('' once a read succeeds)."""
        self.decision_error = ""
        """Why the last decision failed ('' once a decision succeeds)."""
        self._in_flight: set[str] = set()

    def compose_body(self) -> ComposeResult:
        yield Static("confirmations", id="confirmations-title")
        table: DataTable[Text | str] = DataTable(id="confirmation-items", cursor_type="row")
        table.add_columns("Tenant", "Kind", "What it will do", "Queued", "Why")
        yield table
        yield Static("", id="confirmation-detail")
        yield Static("", id="confirmations-error")

    def on_mount(self) -> None:
        super().on_mount()
        # Approving `compact` uses the kernel manager, which must be imported on the UI thread;
        # the overview does it after its first frame, unless this screen opened before that.
        self.dashboard.warm_up_once()
        self._describe_scope()
        self._load()

    def _scope(self) -> str | None:
        return None if self.all_tenants else self.tenant_id

    def _describe_scope(self) -> None:
        scope = self._scope()
        self.sub_title = f"{scope} · confirmations" if scope else "confirmations · all tenants"

    @work(thread=True, exclusive=True, exit_on_error=False, group="confirmations-load")
    def _load(self) -> None:
        scope = self._scope()
        try:
            items = self.dashboard.source.confirmations(scope)
        except Exception as exc:  # noqa: BLE001 - UI edge: shown in the screen, retried
            self.post_message(self.ItemsReady(scope, None, str(exc)))
        else:
            self.post_message(self.ItemsReady(scope, items))

    def on_confirmations_screen_items_ready(self, message: ItemsReady) -> None:
        if message.scope != self._scope():
            return  # read before `t` changed the scope: the read of the new scope follows
        if message.items is None:
            self.read_error = message.error
        else:
            self.read_error = ""
            self.show_items(message.items)
        self._show_errors()
        self.reschedule("confirmations", CONFIRMATIONS_EVERY_S, self._load)

    def _show_errors(self) -> None:
        """Say what failed (Redis down, service down…); the last list stays on screen."""
        lines = [e for e in (self.read_error, self.decision_error) if e]
        self.query_one("#confirmations-error", Static).update(
            Text("\n".join(f"⚠ {e}" for e in lines)) if lines else ""
        )

    def show_items(self, items: list[PendingConfirmation]) -> None:
        """Render the list, keeping the cursor on the same confirmation."""
        table = self.query_one("#confirmation-items", DataTable)
        current = self.current()
        if [i.view.id for i in items] != [i.view.id for i in self.items] or not table.row_count:
            table.clear()
            for it in items:
                v = it.view
                when = f"{v.created_at:%Y-%m-%d %H:%M}" if v.created_at else "—"
                kind = Text(v.kind, style="bold red" if v.kind == PURGE_KIND else "bold")
                # Text cells: a payload's brackets are shown, never parsed as markup.
                cells = (Text(it.tenant_id), kind, Text(v.title), Text(when), Text(v.detail))
                table.add_row(*cells, key=v.id)
        self.items = items
        ids = [i.view.id for i in items]
        if current is not None and current.view.id in ids:
            table.move_cursor(row=ids.index(current.view.id), animate=False)
        scope = self._scope() or "all tenants"
        title = Text(f"{scope}: {len(items)} action(s) waiting for your decision", style="bold")
        title.append("   a approve · x reject · t this tenant / all", style="dim")
        self.query_one("#confirmations-title", Static).update(title)
        self._show_detail()

    def current(self) -> PendingConfirmation | None:
        """The confirmation under the cursor."""
        table = self.query_one("#confirmation-items", DataTable)
        if not table.row_count or not self.items:
            return None
        return self.items[min(table.cursor_row, len(self.items) - 1)]

    def on_data_table_row_highlighted(self) -> None:
        self._show_detail()

    def _show_detail(self) -> None:
        item = self.current()
        detail = self.query_one("#confirmation-detail", Static)
        if item is None:
            detail.update(Text("nothing waits for a decision", style="dim"))
            return
        v = item.view
        text = Text(f"{item.tenant_id} · {v.kind} · {v.id}\n", style="bold")
        text.append(f"{v.title}\n")
        text.append(f"why: {v.detail or '—'}", style="dim")
        if v.kind == PURGE_KIND:
            text.append("\napproving asks you to type the tenant id", style="yellow")
        elif asks_yes_no(v.kind):
            text.append("\napproving asks a yes/no question first", style="dim")
        detail.update(text)

    def action_reload(self) -> None:
        """Read the confirmations now."""
        self._load()

    def action_toggle_scope(self) -> None:
        """Switch between the tenant the screen was opened for and every tenant."""
        if self.tenant_id is None:
            self.notify("opened for every tenant", severity="warning")
            return
        self.all_tenants = not self.all_tenants
        self._describe_scope()
        self._load()

    def _pick(self) -> PendingConfirmation | None:
        item = self.current()
        if item is None:
            self.notify("nothing waits for a decision", severity="warning")
        elif item.view.id in self._in_flight:
            self.notify("this decision is already being applied", severity="warning")
            return None
        return item

    def action_approve(self) -> None:
        """Approve the confirmation under the cursor (after a question for destructive kinds)."""
        item = self._pick()
        if item is None:
            return
        kind = item.view.kind
        if kind == PURGE_KIND:

            def typed(value: str | None) -> None:
                if value is not None:
                    self._resolve(item, True, value)

            self.app.push_screen(ConfirmPurgeApproval(item.tenant_id, item.view.title), typed)
        elif asks_yes_no(kind):

            def answered(yes: bool | None) -> None:
                if yes:
                    self._resolve(item, True)

            self.app.push_screen(ApproveAction(item), answered)
        else:
            self._resolve(item, True)

    def action_reject(self) -> None:
        """Reject the confirmation under the cursor: the decision is recorded, nothing runs."""
        item = self._pick()
        if item is not None:
            self._resolve(item, False)

    def _resolve(self, item: PendingConfirmation, approve: bool, typed: str = "") -> None:
        self._in_flight.add(item.view.id)
        verb = "applying" if approve else "rejecting"
        self.notify(f"{verb} {item.view.kind} for {item.tenant_id}…", title="confirmation")
        self._apply(item, approve, typed)

    @work(thread=True, exit_on_error=False, group="confirmations-resolve")
    def _apply(self, item: PendingConfirmation, approve: bool, typed: str) -> None:
        from nika_tui.dashboard.model import check_purge_confirmation

        try:
            if approve and item.view.kind == PURGE_KIND:
                # Checked in the dialog and again here, like the purge screen's source.
                check_purge_confirmation(item.tenant_id, typed)
            outcome = self.dashboard.source.resolve_confirmation(
                item.tenant_id, item.view.id, approve
            )
        except Exception as exc:  # noqa: BLE001 - UI edge: shown in the screen
            self.post_message(self.Resolved(item, "", str(exc)))
        else:
            self.post_message(self.Resolved(item, outcome))

    def on_confirmations_screen_resolved(self, message: Resolved) -> None:
        self._in_flight.discard(message.item.view.id)
        if message.error:
            self.decision_error = (
                f"{message.item.view.kind} for {message.item.tenant_id}: {message.error}"
            )
            self.notify(message.error, title="confirmation failed", severity="error")
        else:
            self.decision_error = ""
            self.notify(message.outcome, title="confirmation")
        self._show_errors()
        self._load()
        self.dashboard.request_refresh()
