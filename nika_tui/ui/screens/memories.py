"""The memory browser: every memory of a tenant, filtered and searched, with its chain.

One DataTable row per memory (status, layer, valid time, project, source, text); the pane
below shows the one under the cursor in full with its supersede chain. ``T`` turns the table
into a timeline over valid time (a bar per memory, ``│`` at the as-of date); the as-of box
keeps what was current then (issue 21). Retire, restore and send-to-review ask first, then go
through the memory service like ``nika review`` does. The list comes in pages of
:data:`~nika_tui.dashboard.memory_views.PAGE`; ``n`` (or the cursor reaching the last row)
appends the next one, so every memory of the tenant can be reached.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from nika_tui.dashboard.memory_views import (
    LAYER_FILTERS,
    PAGE,
    STATUS_FILTERS,
    ChainVersion,
    MemoryEvent,
    MemoryFilter,
    MemoryList,
    MemoryView,
)
from nika_tui.domain.timeline import parse_as_of
from nika_tui.ui.screens.ask import AskReason
from nika_tui.ui.screens.base import DashboardScreen
from nika_tui.ui.widgets.memory_text import (
    STATUS_STYLE,
    detail_text,
    refusal,
    short,
    source_text,
    span_bar,
    time_range,
    when,
)

# The text early: at 80 columns the last columns are off-screen, and a memory is its text.
COLUMNS = ("Status", "Valid from", "Text", "Until", "Layer", "Project", "Source")
TIMELINE_COLUMNS = ("Status", "Valid time", "Text", "Valid from", "Until")


class MemoryBrowserScreen(DashboardScreen):
    """Browse one tenant's memories; act on one with confirmation."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "focus_search", "Search"),
        Binding("l", "cycle_layer", "Layer"),
        Binding("t", "cycle_status", "Status"),
        Binding("T", "toggle_timeline", "Timeline"),
        Binding("r", "retire", "Retire"),
        Binding("u", "restore", "Restore"),
        Binding("v", "send_review", "To review"),
        Binding("n", "more", "More"),
        Binding("ctrl+r", "reload", "Reload", show=False),
    ]
    HELP_TITLE = "Memory browser"
    HELP = """Every memory of the tenant, newest valid time first: status (current, retired,
in review), layer, when it became true and until when, project, who wrote it (agent · session ·
hook, or the imported file) and its text. The pane below shows the memory under the cursor in
full with its supersede chain. `/` searches (a substring or an exact id; `enter` applies the
search, project and *as of* boxes); *as of* keeps what was current at that date. `l` / `t`
cycle the layer / status filters; `T` draws each memory's valid time as a bar (the timeline),
`│` at the as-of date. `r` retire, `u` restore, `v` send to review: each asks first and asks
why; the reason is kept and shown in the memory's history in the pane. The list loads 500 at a
time: `n` (or moving past the last row) loads the next 500; the title says how many are left."""

    class Listed(Message):
        """The list came back (``error`` set when it failed): the pages from ``offset`` on,
        read for the filters ``flt``."""

        def __init__(
            self, listing: MemoryList | None, error: str, flt: MemoryFilter, offset: int
        ) -> None:
            super().__init__()
            self.listing = listing
            self.error = error
            self.flt = flt
            self.offset = offset

    class Chained(Message):
        """The chain and the history of the memory under the cursor came back."""

        def __init__(
            self, memory_id: str, chain: tuple[ChainVersion, ...], history: tuple[MemoryEvent, ...]
        ) -> None:
            super().__init__()
            self.memory_id = memory_id
            self.chain = chain
            self.history = history

    class Acted(Message):
        """An action finished."""

        def __init__(self, outcome: str, error: str = "") -> None:
            super().__init__()
            self.outcome = outcome
            self.error = error

    def __init__(self, tenant_id: str, flt: MemoryFilter | None = None) -> None:
        super().__init__()
        self.tenant_id = tenant_id
        self.flt = flt or MemoryFilter()
        """The filters in force (the search, as-of and project boxes, the layer and status keys)."""
        self.listing = MemoryList(tenant_id)
        self._loading_more = False
        """A next page is on its way (``n`` and the cursor at the end ask once)."""
        self.timeline = False
        """True when the table shows valid-time bars (``T``)."""
        self._chain: tuple[str, tuple[ChainVersion, ...]] = ("", ())
        self._history: tuple[MemoryEvent, ...] = ()
        """The decisions about the memory of ``_chain`` (retired, restored… and why)."""

    def compose_body(self) -> ComposeResult:
        yield Static("", id="mem-title")
        with Horizontal(id="mem-filters"):
            yield Input(self.flt.text, placeholder="search text or id (enter)", id="mem-search")
            yield Input(self.flt.project, placeholder="project", id="mem-project")
            yield Input(
                self.flt.as_of.isoformat() if self.flt.as_of else "",
                placeholder="as of date, e.g. 2026-03-15",
                id="mem-as-of",
            )
        table: DataTable[Text | str] = DataTable(id="mem-table", cursor_type="row")
        yield table
        with VerticalScroll(id="mem-detail-box"):
            yield Static(Text("loading…", style="dim"), id="mem-detail")

    def on_mount(self) -> None:
        super().on_mount()
        self.sub_title = f"{self.tenant_id} · memories"
        self._columns()
        self.query_one("#mem-table", DataTable).focus()
        self._title()
        self._load()

    # --- reads --------------------------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, group="memories")
    def _load(self, offset: int = 0, upto: int = 0) -> None:
        """Read the pages from ``offset`` until at least ``upto`` rows (one page at least): a
        reload keeps as many rows as were loaded, so the cursor stays where it was."""
        flt, source = self.flt, self.dashboard.source
        try:
            listing = source.memories(self.tenant_id, flt, offset)
            rows = list(listing.memories)
            while listing.memories and offset + len(rows) < min(upto, listing.total):
                listing = source.memories(self.tenant_id, flt, offset + len(rows))
                rows.extend(listing.memories)
        except Exception as exc:  # noqa: BLE001 - UI edge: shown in the pane
            self.post_message(self.Listed(None, str(exc), flt, offset))
            return
        page = MemoryList(self.tenant_id, tuple(rows), listing.total)
        self.post_message(self.Listed(page, "", flt, offset))

    @work(thread=True, exclusive=True, exit_on_error=False, group="memory-chain")
    def _load_chain(self, memory_id: str) -> None:
        source = self.dashboard.source
        try:
            chain = source.memory_chain(self.tenant_id, memory_id)
        except Exception:  # noqa: BLE001 - UI edge: the pane shows the memory without it
            chain = ()
        try:
            history = source.memory_history(self.tenant_id, memory_id)
        except Exception:  # noqa: BLE001 - UI edge: the pane shows the memory without it
            history = ()
        self.post_message(self.Chained(memory_id, chain, history))

    def on_memory_browser_screen_listed(self, message: Listed) -> None:
        if message.flt != self.flt:
            return  # read for filters changed since: the newer read follows
        self._loading_more = False
        if message.listing is None:
            self.query_one("#mem-detail", Static).update(
                Text(f"memories unavailable: {message.error}", style="red")
            )
            return
        keep = self.current()  # read before the rows change under the cursor
        if message.offset == 0:
            self.listing = message.listing
        elif message.offset == len(self.listing.memories):  # the next page: appended
            memories = self.listing.memories + message.listing.memories
            self.listing = MemoryList(self.tenant_id, memories, message.listing.total)
        else:
            return  # a page for rows replaced meanwhile (a reload came first)
        self._fill(keep)

    def on_memory_browser_screen_chained(self, message: Chained) -> None:
        self._chain = (message.memory_id, message.chain)
        self._history = message.history
        self._show_current()

    # --- rendering ----------------------------------------------------------------------
    def _columns(self) -> None:
        table = self.query_one("#mem-table", DataTable)
        table.clear(columns=True)
        table.add_columns(*(TIMELINE_COLUMNS if self.timeline else COLUMNS))

    def _title(self) -> None:
        f = self.flt
        text = Text(f"{self.tenant_id}: memories", style="bold")
        shown, total = len(self.listing.memories), self.listing.total
        text.append(f" · {shown} shown" + (f" of {total}" if total > shown else ""))
        if self.listing.more:
            text.append(f" · n loads {min(PAGE, self.listing.more)} more", style="bold")
        text.append(f" · layer {f.layer or 'all'} · status {f.status or 'all'}", style="dim")
        if f.as_of is not None:
            text.append(f" · current as of {f.as_of:%Y-%m-%d %H:%M}", style="magenta")
        if self.timeline:
            text.append(" · timeline (valid time)", style="cyan")
        self.query_one("#mem-title", Static).update(text)

    def _fill(self, current: MemoryView | None = None) -> None:
        table = self.query_one("#mem-table", DataTable)
        current = current or self.current()
        table.clear()
        memories = self.listing.memories
        lo, hi = time_range(memories, self.dashboard.clock())
        for m in memories:
            status = Text(m.status, style=STATUS_STYLE.get(m.status, ""))
            if self.timeline:
                bar = span_bar(m, lo, hi, self.flt.as_of)
                cells: tuple[Text | str, ...] = (status, bar, short(m.text, 50))
                cells += (when(m.valid_from), when(m.valid_until))
            else:
                cells = (status, when(m.valid_from), short(m.text), when(m.valid_until), m.layer)
                cells += (m.project, short(source_text(m), 28))
            table.add_row(*cells, key=m.id)
        ids = [m.id for m in memories]
        # The same memory under the cursor, else the top (not the last row: that loads more).
        at = ids.index(current.id) if current is not None and current.id in ids else 0
        table.move_cursor(row=at, animate=False)
        self._title()
        self._show_current()

    def current(self) -> MemoryView | None:
        """The memory under the cursor."""
        table = self.query_one("#mem-table", DataTable)
        memories = self.listing.memories
        if not table.row_count or not memories:
            return None
        return memories[min(table.cursor_row, len(memories) - 1)]

    def on_data_table_row_highlighted(self) -> None:
        self._show_current()
        table = self.query_one("#mem-table", DataTable)
        if self.listing.more and table.row_count and table.cursor_row >= table.row_count - 1:
            self.action_more()  # the last row reached: the next page follows it

    def action_more(self) -> None:
        """Load the next page of memories below the ones shown."""
        if not self.listing.more:
            self.notify(f"all {self.listing.total} memories are shown", title="memories")
            return
        if not self._loading_more:
            self._loading_more = True
            self._load(offset=len(self.listing.memories))

    def _show_current(self) -> None:
        pane = self.query_one("#mem-detail", Static)
        m = self.current()
        if m is None:
            pane.update(Text("no memory matches these filters", style="dim"))
            return
        chain_id, chain = self._chain
        if chain_id != m.id:
            self._chain, self._history = (m.id, ()), ()
            self._load_chain(m.id)
        mine = chain_id == m.id
        pane.update(detail_text(m, chain if mine else (), self._history if mine else ()))

    # --- filters ------------------------------------------------------------------------
    def _set_filter(self, flt: MemoryFilter) -> None:
        self.flt = flt
        self._loading_more = False
        self._title()
        self._load()

    @on(Input.Submitted)
    def _filters_submitted(self) -> None:
        when_text = self.query_one("#mem-as-of", Input).value.strip()
        try:
            as_of = parse_as_of(when_text) if when_text else None
        except ValueError as exc:
            self.notify(str(exc), title="as of", severity="error")
            return
        self._set_filter(
            MemoryFilter(
                text=self.query_one("#mem-search", Input).value.strip(),
                layer=self.flt.layer,
                project=self.query_one("#mem-project", Input).value.strip(),
                status=self.flt.status,
                as_of=as_of,
            )
        )
        self.query_one("#mem-table", DataTable).focus()

    def action_focus_search(self) -> None:
        """Type a search (enter applies every box)."""
        self.query_one("#mem-search", Input).focus()

    def action_cycle_layer(self) -> None:
        """All layers → semantic → episodic → all."""
        i = (LAYER_FILTERS.index(self.flt.layer) + 1) % len(LAYER_FILTERS)
        self._set_filter(replace(self.flt, layer=LAYER_FILTERS[i]))

    def action_cycle_status(self) -> None:
        """All → current → retired → in review → all."""
        i = (STATUS_FILTERS.index(self.flt.status) + 1) % len(STATUS_FILTERS)
        self._set_filter(replace(self.flt, status=STATUS_FILTERS[i]))

    def action_toggle_timeline(self) -> None:
        """Table ↔ timeline over valid time."""
        self.timeline = not self.timeline
        self._columns()
        self._fill()

    def action_reload(self) -> None:
        """Read the list again (as many rows as are loaded)."""
        self._load(upto=len(self.listing.memories))

    # --- actions ------------------------------------------------------------------------
    def _ask(self, verb: str, detail: str, run: str, default_reason: str) -> None:
        m = self.current()
        if m is None:
            self.notify("no memory selected", severity="warning")
            return
        refused = refusal(run, m)
        if refused:
            self.notify(f"{m.id} {refused}", title=verb, severity="warning")
            return
        question = f"{verb} memory {m.id} of {self.tenant_id}?"

        def answered(reason: str | None) -> None:
            if reason is not None:
                self._act(run, m.id, reason)

        detail = f"{short(m.text, 200)}\n{detail}"
        self.app.push_screen(AskReason(question, detail, verb, default_reason), answered)

    def action_retire(self) -> None:
        """Retire the memory under the cursor (asks first, and why)."""
        self._ask(
            "Retire",
            "Recall stops returning it; history keeps it; `u` restores.",
            "retire",
            "no longer true",
        )

    def action_restore(self) -> None:
        """Make the retired memory under the cursor current again (asks first, and why)."""
        self._ask(
            "Restore",
            "It becomes current again, beside what replaced it.",
            "restore",
            "retired by mistake",
        )

    def action_send_review(self) -> None:
        """Queue "retire this?" in the review queue (asks first, and why)."""
        self._ask(
            "Send to review",
            "A pair waits in the review queue (`v` there).",
            "review",
            "may be out of date",
        )

    @work(thread=True, exit_on_error=False, group="memory-action")
    def _act(self, run: str, memory_id: str, reason: str) -> None:
        source, t = self.dashboard.source, self.tenant_id
        try:
            if run == "retire":
                outcome = source.retire_memory(t, memory_id, reason)
            elif run == "restore":
                outcome = source.restore_memory(t, memory_id, reason)
            else:
                outcome = source.review_memory(t, memory_id, reason)
        except Exception as exc:  # noqa: BLE001 - UI edge: shown to the person
            self.post_message(self.Acted("", str(exc)))
            return
        self.post_message(self.Acted(f"{outcome} ({reason})"))

    def on_memory_browser_screen_acted(self, message: Acted) -> None:
        if message.error:
            self.notify(message.error, title="memory action failed", severity="error")
        else:
            self.notify(message.outcome, title="memory")
        self._chain = ("", ())
        self._load(upto=len(self.listing.memories))
        self.dashboard.request_refresh()
