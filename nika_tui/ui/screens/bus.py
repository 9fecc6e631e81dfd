"""Bus / log: the JSONL bus tailed live, filterable by tenant, action_type and domain."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, RichLog, Static

from nika_tui.dashboard.memory_views import MemoryFilter
from nika_tui.dashboard.model import BusFilter, BusLineView, BusTail
from nika_tui.ui.screens.base import DashboardScreen

BUS_EVERY_S = 1.0


def line_text(line: BusLineView) -> Text:
    """``10:00:00 beta debt.audit [system/memory] worst=duplicate_rate``."""
    when = f"{line.at:%H:%M:%S}" if line.at else "--:--:--"
    text = Text(f"{when} ", style="dim")
    text.append(f"{line.tenant_id:<12} ", style="bold")
    if line.unreadable:
        text.append("unreadable ", style="bold red")
        text.append(line.raw)
        return text
    text.append(f"{line.kind:<22}", style="cyan")
    text.append(f" [{line.action_type or '-'}/{line.domain or '-'}] ", style="magenta")
    if line.memory_id:
        # Clickable: opens the memory browser on the memory the line is about.
        call = f"screen.open_memory({line.tenant_id!r}, {line.memory_id!r})"
        text.append(f"⟶ {line.memory_id} ", style=Style(underline=True, meta={"@click": call}))
    text.append(line.summary)
    return text


class BusScreen(DashboardScreen):
    """The bus of every tenant (or one), newest at the bottom."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("m", "open_selected", "Open ▶ memory"),
        Binding("ctrl+n", "select_memory(1)", "Next memory line"),
        Binding("ctrl+b", "select_memory(-1)", "Previous memory line"),
    ]
    HELP_TITLE = "Bus / log"
    HELP = """Every tenant's JSONL bus, live, newest at the bottom; the three boxes filter by
tenant, action_type and domain. A line about a memory shows its id underlined: click it to open
that memory in the memory browser. By keyboard: `ctrl+b` / `ctrl+n` pick a line about a memory
(the newest until you pick; the line under the log says which), `m` opens its memory."""

    class Tail(Message):
        """New lines since the cursor."""

        def __init__(self, tail: BusTail, generation: int) -> None:
            super().__init__()
            self.tail = tail
            self.generation = generation

    def __init__(self, tenant: str = "") -> None:
        super().__init__()
        self.flt = BusFilter(tenant=tenant)
        self._cursor: str | None = None
        self._generation = 0
        self.lines_shown = 0
        """How many lines the log holds (tests read it)."""
        self.memory_lines: list[tuple[str, str]] = []
        """``(tenant, memory id)`` of each line about a memory, oldest first."""
        self._picked: int | None = None
        """Index into :attr:`memory_lines` picked by key; ``None`` follows the newest."""

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="bus-filters"):
            yield Input(self.flt.tenant, placeholder="tenant", id="f-tenant")
            yield Input(placeholder="action_type (code, review…)", id="f-action")
            yield Input(placeholder="domain (memory, hooks…)", id="f-domain")
        yield RichLog(id="bus-log", wrap=False, max_lines=2000)
        yield Static(Text("no line about a memory yet", style="dim"), id="bus-selected")

    def on_mount(self) -> None:
        super().on_mount()
        self.sub_title = "bus"
        self.query_one("#bus-log", RichLog).focus()
        self._poll()

    @work(thread=True, exclusive=True, exit_on_error=False, group="bus")
    def _poll(self) -> None:
        generation, cursor, flt = self._generation, self._cursor, self.flt
        try:
            tail = self.dashboard.source.bus_tail(flt, cursor)
        except Exception as exc:  # noqa: BLE001 - UI edge: say it, keep the cursor
            self.post_message(
                self.Tail(
                    BusTail(
                        (BusLineView("", f"(bus unavailable: {exc})", unreadable=True),),
                        cursor or "",
                    ),
                    generation,
                )
            )
            return
        self.post_message(self.Tail(tail, generation))

    def on_bus_screen_tail(self, message: Tail) -> None:
        if message.generation == self._generation:
            # A tail read under an older filter is dropped: the log restarts with the new one.
            if message.tail.cursor:
                self._cursor = message.tail.cursor
            log = self.query_one("#bus-log", RichLog)
            for line in message.tail.lines:
                log.write(line_text(line))
                if line.memory_id:
                    self.memory_lines.append((line.tenant_id, line.memory_id))
            self.lines_shown += len(message.tail.lines)
            self._show_selected()
        self.reschedule("bus", BUS_EVERY_S, self._poll)

    @on(Input.Changed)
    def _filter_changed(self) -> None:
        self.flt = BusFilter(
            tenant=self.query_one("#f-tenant", Input).value.strip(),
            action_type=self.query_one("#f-action", Input).value.strip(),
            domain=self.query_one("#f-domain", Input).value.strip(),
        )
        self._generation += 1
        self._cursor = None
        self.lines_shown = 0
        self.memory_lines, self._picked = [], None
        self._show_selected()
        self.query_one("#bus-log", RichLog).clear()
        self._poll()

    def action_open_memory(self, tenant_id: str, memory_id: str) -> None:
        """Open the memory browser on one memory (a line's memory id was clicked)."""
        self.dashboard.open_memories(tenant_id, MemoryFilter(text=memory_id))

    @property
    def latest_memory(self) -> tuple[str, str] | None:
        """``(tenant, memory id)`` of the newest line about a memory."""
        return self.memory_lines[-1] if self.memory_lines else None

    @property
    def selected_memory(self) -> tuple[str, str] | None:
        """``(tenant, memory id)`` of the ▶ line: the picked one, else the newest."""
        if self._picked is None:
            return self.latest_memory
        return self.memory_lines[self._picked]

    def _show_selected(self) -> None:
        label = self.query_one("#bus-selected", Static)
        if (picked := self.selected_memory) is None:
            label.update(Text("no line about a memory yet", style="dim"))
            return
        n = len(self.memory_lines)
        at = n if self._picked is None else self._picked + 1
        text = Text("▶ ", style="bold green")
        text.append(f"{picked[1]} ({picked[0]})", style="bold")
        text.append(
            f" · line {at} of {n} about a memory · `m` opens it, `ctrl+b` / `ctrl+n` pick another",
            style="dim",
        )
        label.update(text)

    def action_select_memory(self, step: int) -> None:
        """Move the ▶ to the previous or next line about a memory."""
        n = len(self.memory_lines)
        if n == 0:
            self.notify("no line about a memory yet", severity="warning")
            return
        if n == 1:
            self.notify("only one line about a memory: nothing to move to", severity="warning")
            return
        at = ((n - 1 if self._picked is None else self._picked) + step) % n
        # Back on the newest line: follow the newest again as lines arrive.
        self._picked = None if at == n - 1 else at
        self._show_selected()

    def action_open_selected(self) -> None:
        """Open the memory of the ▶ line (the newest line about one until another is picked)."""
        if (picked := self.selected_memory) is None:
            self.notify("no line about a memory yet", severity="warning")
            return
        self.action_open_memory(*picked)
