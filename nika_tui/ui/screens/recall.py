"""Recall: a tenant-scoped search box; hits with their envelope, or `no memory for {X}`.

An optional ``as of`` box (a date or ISO time) answers with what was current then, by valid
time (docs/memory.md); empty means now. ``ctrl+n`` / ``ctrl+b`` pick a hit (▶), ``ctrl+y`` marks
it useful and ``ctrl+g`` not useful: labels `nika tune recall` learns from (docs/tuning.md).
Control keys, so that they work while the query box has the focus.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Input, Static

from nika_tui.dashboard.memory_views import MemoryFilter
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


SCORE_NOTE = (
    "cos = cosine similarity of the memory to the question (what `nika memory recall` prints; "
    "1 = same meaning, under ~0.3 = unrelated). rank = the fused hybrid score (dense + keyword "
    "+ recency) that orders the hits; small by construction, compare it only between hits."
)


def recall_text(view: RecallView, selected: int | None = None) -> Text:
    """Hits (cosine as the CLI shows it, rank, status, valid time, text, envelope) or PALACE.

    Each id is clickable: it opens the memory browser on that memory. ``selected`` gets a ▶
    (the hit the marking keys act on).
    """
    if not view.hits:
        return Text(view.palace or f"no memory for {view.query}", style="bold yellow")
    text = Text(SCORE_NOTE + "\n\n", style="dim italic")
    for i, hit in enumerate(view.hits):
        text.append("▶ " if i == selected else "  ", style="bold green")
        cos = f"cos {hit.cosine:.2f}" if hit.cosine is not None else "cos —"
        text.append(f"{cos} ", style="bold cyan")
        text.append(f"rank {hit.score:.3f}  ", style="dim")
        text.append(
            hit.id, style=Style(underline=True, meta={"@click": f"screen.open_memory({hit.id!r})"})
        )
        status = hit.status or "current"
        if hit.superseded_by:
            status += f" → {hit.superseded_by}"
        text.append(f" [{hit.layer}] ", style="dim")
        text.append(status, style="green" if status == "current" else "yellow")
        valid = f"{hit.valid_from:%Y-%m-%d %H:%M}" if hit.valid_from else "—"
        text.append(f" · valid from {valid}", style="dim")
        text.append(f"\n  {hit.text}\n")
        env = " · ".join(f"{k}={hit.envelope[k]}" for k in ENVELOPE_KEYS if hit.envelope.get(k))
        text.append(f"  {env}\n\n", style="magenta")
    return text


class RecallScreen(DashboardScreen):
    """Search one tenant's memory."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+o", "open_selected", "Open ▶ hit in memories"),
        Binding("ctrl+n", "select_hit(1)", "Next hit"),
        Binding("ctrl+b", "select_hit(-1)", "Previous hit"),
        Binding("ctrl+y", "mark(True)", "Useful"),
        Binding("ctrl+g", "mark(False)", "Not useful"),
    ]
    HELP_TITLE = "Recall"
    HELP = (
        """Type a question, `enter`. An *as of* date answers with what was current then,
by valid time. `ctrl+n` / `ctrl+b` pick a hit (▶); `ctrl+o` (or a click on a hit's id)
opens it in the memory browser: status, valid time, source and its supersede chain.
`ctrl+y` marks the ▶ hit useful, `ctrl+g` not useful: what `nika tune recall` learns from. """
        + SCORE_NOTE
    )

    class Marked(Message):
        """A relevance mark was saved (or failed)."""

        def __init__(self, outcome: str, error: str = "") -> None:
            super().__init__()
            self.outcome = outcome
            self.error = error

    class Answer(Message):
        """The recall came back."""

        def __init__(self, view: RecallView | None, error: str = "") -> None:
            super().__init__()
            self.view = view
            self.error = error

    def __init__(self, tenant_id: str) -> None:
        super().__init__()
        self.tenant_id = tenant_id
        self.view: RecallView | None = None
        """The last answer shown."""
        self.selected = 0
        """The ▶ hit: the one ``ctrl+o`` opens and the marking keys act on."""

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
            self.view, self.selected = message.view, 0
            hits.update(recall_text(message.view, self.selected))

    def action_open_memory(self, memory_id: str) -> None:
        """Open the memory browser on one memory (a hit's id was clicked)."""
        self.dashboard.open_memories(self.tenant_id, MemoryFilter(text=memory_id))

    def action_open_selected(self) -> None:
        """Open the ▶ hit in the memory browser."""
        if self.view is None or not self.view.hits:
            self.notify("no hit to open: recall something first", severity="warning")
            return
        self.action_open_memory(self.view.hits[self.selected].id)

    def action_select_hit(self, step: int) -> None:
        """Move the ▶ to the next or previous hit."""
        if self.view is None or not self.view.hits:
            self.notify("no hit to move to: recall something first", severity="warning")
            return
        if len(self.view.hits) == 1:
            self.notify("only one hit: nothing to move to", severity="warning")
            return
        self.selected = (self.selected + step) % len(self.view.hits)
        self.query_one("#recall-hits", Static).update(recall_text(self.view, self.selected))

    def action_mark(self, useful: bool) -> None:
        """Label the ▶ hit useful or not for this query (the tenant's relevance set)."""
        if self.view is None or not self.view.hits:
            self.notify("recall something first, then mark a hit", severity="warning")
            return
        self._mark(self.view.query, self.view.hits[self.selected].id, useful)

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
