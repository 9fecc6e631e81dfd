"""Recall: a tenant-scoped search box; hits with their envelope, or `no memory for {X}`.

An optional ``as of`` box (a date or ISO time) answers with what was current then, by valid
time (docs/memory.md); empty means now.
"""

from __future__ import annotations

from datetime import datetime

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
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


def recall_text(view: RecallView) -> Text:
    """Hits (score, layer, text, envelope) or the PALACE line."""
    if not view.hits:
        return Text(view.palace or f"no memory for {view.query}", style="bold yellow")
    text = Text()
    for hit in view.hits:
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

    def __init__(self, tenant_id: str) -> None:
        super().__init__(id="recall")
        self.tenant_id = tenant_id

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
        if message.view is None:
            hits.update(Text(f"recall failed: {message.error}", style="red"))
        else:
            hits.update(recall_text(message.view))
