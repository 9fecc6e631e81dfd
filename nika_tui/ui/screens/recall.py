"""Recall: a tenant-scoped search box; hits with their envelope, or `no memory for {X}`.

An optional ``as of`` box (a date or ISO time) answers with what was current then, by valid
time (docs/memory.md); empty means now. ``ctrl+n`` / ``ctrl+b`` pick a hit (▶), ``ctrl+y`` marks
it useful and ``ctrl+o`` not useful: labels `nika tune recall` learns from (docs/tuning.md).
Control keys, so that they work while the query box has the focus.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Input, Static

from nika_tui.dashboard.model import RecallView
from nika_tui.domain.timeline import parse_as_of
from nika_tui.ui.screens.base import DashboardScreen

ENVELOPE_KEYS = (
    "session_id",
    "agent_type",
    "trigger",
    "project_id",
    "job_id",
    "task_id",
    "action_type",
    "domain",
    "intent",
    "timestamp",
)


def recall_text(view: RecallView, selected: int | None = None) -> Text:
    """Hits (score, layer, text, envelope) or the PALACE line; ``selected`` gets a ▶."""
    if not view.hits:
        return Text(view.palace or f"no memory for {view.query}", style="bold yellow")
    text = Text()
    for i, hit in enumerate(view.hits):
        text.append("▶ " if i == selected else "  ", style="bold green")
        text.append(f"{hit.score:.2f} ", style="bold cyan")
        text.append(f"{hit.id} [{hit.layer}]", style="dim")
        text.append(f"\n  {hit.text}\n")
        env = " · ".join(f"{k}={hit.envelope[k]}" for k in ENVELOPE_KEYS if hit.envelope.get(k))
        text.append(f"  {env}\n\n", style="magenta")
    return text


class RecallScreen(DashboardScreen):
    """Search one tenant's memory."""

    class Answer(Message):
        """The recall came back."""

        def __init__(self, view: RecallView | None, error: str = "") -> None:
            super().__init__()
            self.view = view
            self.error = error

    class Marked(Message):
        """A relevance mark was saved (or failed)."""

        def __init__(self, outcome: str, error: str = "") -> None:
            super().__init__()
            self.outcome = outcome
            self.error = error

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+n", "select_hit(1)", "Next hit"),
        Binding("ctrl+b", "select_hit(-1)", "Previous hit"),
        Binding("ctrl+y", "mark(True)", "Useful"),
        Binding("ctrl+o", "mark(False)", "Not useful"),
    ]

    def __init__(self, tenant_id: str) -> None:
        super().__init__(id="recall")
        self.tenant_id = tenant_id
        self._view: RecallView | None = None
        self._selected = 0

    def compose_body(self) -> ComposeResult:
        yield Input(placeholder=f"recall in {self.tenant_id}… (enter)", id="recall-query")
        yield Input(placeholder="as of (2026-03-15 or an ISO time; empty = now)", id="recall-as-of")
        with VerticalScroll(id="recall-results"):
            yield Static(Text("type a question and press enter", style="dim"), id="recall-hits")

    def on_mount(self) -> None:
        super().on_mount()
        self.sub_title = f"{self.tenant_id} · recall"
        self.query_one("#recall-query", Input).focus()

    @on(Input.Submitted, "#recall-query")
    @on(Input.Submitted, "#recall-as-of")
    def _submitted(self, event: Input.Submitted) -> None:
        query = self.query_one("#recall-query", Input).value.strip()
        when = self.query_one("#recall-as-of", Input).value.strip()
        hits = self.query_one("#recall-hits", Static)
        if not query:
            return
        try:
            as_of = parse_as_of(when) if when else None
        except ValueError as exc:
            hits.update(Text(f"as of: {exc}", style="red"))
            return
        hits.update(Text("searching…", style="dim"))
        self._recall(query, as_of)

    @work(thread=True, exclusive=True, exit_on_error=False, group="recall")
    def _recall(self, query: str, as_of: datetime | None = None) -> None:
        try:
            view = self.dashboard.source.recall(self.tenant_id, query, as_of)
            self.post_message(self.Answer(view))
        except Exception as exc:  # noqa: BLE001 - UI edge
            self.post_message(self.Answer(None, str(exc)))

    def on_recall_screen_answer(self, message: Answer) -> None:
        hits = self.query_one("#recall-hits", Static)
        self._view, self._selected = message.view, 0
        if message.view is None:
            hits.update(Text(f"recall failed: {message.error}", style="red"))
        else:
            hits.update(recall_text(message.view, self._selected))

    def action_select_hit(self, step: int) -> None:
        """Move the ▶ to the next or previous hit."""
        if self._view is None or not self._view.hits:
            return
        self._selected = (self._selected + step) % len(self._view.hits)
        self.query_one("#recall-hits", Static).update(recall_text(self._view, self._selected))

    def action_mark(self, useful: bool) -> None:
        """Label the ▶ hit useful or not for this query (the tenant's relevance set)."""
        if self._view is None or not self._view.hits:
            self.notify("recall something first, then mark a hit", severity="warning")
            return
        self._mark(self._view.query, self._view.hits[self._selected].id, useful)

    @work(thread=True, exclusive=True, exit_on_error=False, group="recall-mark")
    def _mark(self, query: str, hit_id: str, useful: bool) -> None:
        try:
            outcome = self.dashboard.source.mark_recall(self.tenant_id, query, hit_id, useful)
            self.post_message(self.Marked(outcome))
        except Exception as exc:  # noqa: BLE001 - UI edge
            self.post_message(self.Marked("", str(exc)))

    def on_recall_screen_marked(self, message: Marked) -> None:
        if message.error:
            self.notify(message.error, title="mark failed", severity="error")
        else:
            self.notify(message.outcome, title="recall")
