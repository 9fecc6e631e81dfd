"""Review queue: UNCERTAIN pairs side by side; approve-replace / keep both / skip, in batch too."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import DataTable, Static

from nika_tui.dashboard.memory_views import MemoryFilter
from nika_tui.dashboard.model import MemorySide, ReviewItemView, ReviewResolution
from nika_tui.ui.screens.base import DashboardScreen

REVIEW_EVERY_S = 3.0


def side_text(label: str, side: MemorySide) -> Text:
    """One side of a pair: text, valid time and provenance."""
    text = Text(f"{label}  {side.id}\n", style="bold")
    text.append(f"{side.text}\n\n" if side.text else "(no text)\n\n")
    when = f"{side.timestamp:%Y-%m-%d %H:%M} UTC" if side.timestamp else "—"
    text.append(f"valid from {when}\n", style="dim")
    text.append(
        f"session {side.session or '—'} · agent {side.agent or '—'} · turn {side.turn or '—'}",
        style="dim",
    )
    return text


class ReviewScreen(DashboardScreen):
    """One tenant's review queue."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "resolve('replace')", "Approve replace"),
        Binding("k", "resolve('keep')", "Keep both"),
        Binding("s", "resolve('skip')", "Skip"),
        Binding("space", "mark", "Mark"),
        Binding("A", "batch('replace')", "Replace marked"),
        Binding("K", "batch('keep')", "Keep marked"),
        Binding("m", "open_memory('old')", "Open old memory"),
        Binding("M", "open_memory('new')", "Open new memory"),
    ]
    HELP_TITLE = "Review queue"
    HELP = """UNCERTAIN pairs the judge could not settle, oldest first: the OLD memory on the
left, the NEW one on the right, with valid time and provenance. `a` retires the old one
(replaced by the new), `k` keeps both current (logged as *keep*), `s` skips. `space` marks
pairs for `A` / `K`. `m` opens the old memory in the memory browser with its chain, `M`
the new one."""

    class ItemsReady(Message):
        """The queue was read."""

        def __init__(self, items: Sequence[ReviewItemView]) -> None:
            super().__init__()
            self.items = list(items)

    class Resolved(Message):
        """Resolutions were applied (outcomes, errors)."""

        def __init__(self, outcomes: list[str], errors: list[str]) -> None:
            super().__init__()
            self.outcomes = outcomes
            self.errors = errors

    def __init__(self, tenant_id: str) -> None:
        super().__init__()
        self.tenant_id = tenant_id
        self.items: list[ReviewItemView] = []
        self.marked: set[str] = set()
        """Ids marked for a batch action."""

    def compose_body(self) -> ComposeResult:
        yield Static(f"{self.tenant_id}: review queue", id="review-title")
        table: DataTable[Text | str] = DataTable(id="review-items", cursor_type="row")
        table.add_columns("", "Id", "Queued", "Judge", "Reason")
        yield table
        with Horizontal(id="pair"):
            yield Static("", id="old-side", classes="side")
            yield Static("", id="new-side", classes="side")
        yield Static("", id="review-reason")

    def on_mount(self) -> None:
        super().on_mount()
        self.sub_title = f"{self.tenant_id} · review"
        self._load()

    @work(thread=True, exclusive=True, exit_on_error=False, group="review-load")
    def _load(self) -> None:
        try:
            items = self.dashboard.source.review_items(self.tenant_id)
        except Exception:  # noqa: BLE001 - UI edge: keep what is shown, retry
            items = self.items
        self.post_message(self.ItemsReady(items))

    def on_review_screen_items_ready(self, message: ItemsReady) -> None:
        self.show_items(message.items)
        self.reschedule("review", REVIEW_EVERY_S, self._load)

    def show_items(self, items: list[ReviewItemView]) -> None:
        """Render the queue, keeping the cursor on the same pair."""
        table = self.query_one("#review-items", DataTable)
        current = self.current()
        if [i.id for i in items] != [i.id for i in self.items] or not table.row_count:
            table.clear()
            for it in items:
                mark = "✓" if it.id in self.marked else ""
                when = f"{it.created_at:%m-%d %H:%M}" if it.created_at else "—"
                reason = "unreadable (raw kept)" if it.unreadable else it.reason
                table.add_row(mark, it.id, when, it.judge or "—", reason, key=it.id)
        self.items = items
        self.marked &= {i.id for i in items}
        ids = [i.id for i in items]
        if current is not None and current.id in ids:
            table.move_cursor(row=ids.index(current.id), animate=False)
        title = Text(f"{self.tenant_id}: review queue · {len(items)} pair(s)", style="bold")
        if self.marked:
            title.append(f" · {len(self.marked)} marked")
        self.query_one("#review-title", Static).update(title)
        self._show_pair()

    def current(self) -> ReviewItemView | None:
        """The pair under the cursor."""
        table = self.query_one("#review-items", DataTable)
        if not table.row_count or not self.items:
            return None
        row = min(table.cursor_row, len(self.items) - 1)
        return self.items[row]

    def on_data_table_row_highlighted(self) -> None:
        self._show_pair()

    def _show_pair(self) -> None:
        item = self.current()
        old, new = self.query_one("#old-side", Static), self.query_one("#new-side", Static)
        reason = self.query_one("#review-reason", Static)
        if item is None:
            old.update(Text("the queue is empty", style="dim"))
            new.update("")
            reason.update("")
            return
        if item.unreadable:
            old.update(Text(f"unreadable entry {item.id}:\n{item.raw}", style="red"))
            new.update("")
            reason.update("")
            return
        old.update(side_text("OLD", item.old))
        new.update(side_text("NEW", item.new))
        queued = f"{item.created_at:%Y-%m-%d %H:%M}" if item.created_at else "—"
        reason.update(Text(f"judge {item.judge or '—'}: {item.reason}   (queued {queued})"))

    def action_open_memory(self, side: Literal["old", "new"]) -> None:
        """Open one side of the pair (with its chain) in the memory browser."""
        item = self.current()
        if item is None or item.unreadable:
            self.notify("no pair selected", severity="warning")
            return
        memory = item.old if side == "old" else item.new
        if not memory.id:
            self.notify(f"the {side} memory of this pair has no id", severity="warning")
            return
        self.dashboard.open_memories(self.tenant_id, MemoryFilter(text=memory.id))

    def action_mark(self) -> None:
        """Mark or unmark the pair for a batch action."""
        item = self.current()
        if item is None:
            return
        self.marked ^= {item.id}
        table = self.query_one("#review-items", DataTable)
        table.update_cell(
            item.id, table.ordered_columns[0].key, "✓" if item.id in self.marked else ""
        )
        self.show_items(self.items)

    def action_resolve(self, resolution: ReviewResolution) -> None:
        """Resolve the pair under the cursor; skip just moves on."""
        item = self.current()
        if item is None:
            self.notify("the queue is empty")
            return
        if resolution == "skip":
            table = self.query_one("#review-items", DataTable)
            table.move_cursor(row=(table.cursor_row + 1) % max(1, table.row_count))
        self._apply([item.id], resolution)

    def action_batch(self, resolution: ReviewResolution) -> None:
        """Apply one resolution to every marked pair."""
        if not self.marked:
            self.notify("mark pairs with space first", severity="warning")
            return
        self._apply(sorted(self.marked), resolution)
        self.marked.clear()

    @work(thread=True, exit_on_error=False, group="review-resolve")
    def _apply(self, ids: list[str], resolution: ReviewResolution) -> None:
        outcomes, errors = [], []
        for item_id in ids:
            try:
                outcomes.append(
                    self.dashboard.source.resolve_review(self.tenant_id, item_id, resolution)
                )
            except Exception as exc:  # noqa: BLE001 - UI edge: each failure is shown
                errors.append(f"{item_id}: {exc}")
        self.post_message(self.Resolved(outcomes, errors))

    def on_review_screen_resolved(self, message: Resolved) -> None:
        for error in message.errors:
            self.notify(error, title="review failed", severity="error")
        if message.outcomes:
            self.notify("\n".join(message.outcomes), title="review")
        self._load()
        self.dashboard.request_refresh()
