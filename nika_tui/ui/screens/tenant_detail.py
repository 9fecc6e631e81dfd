"""Tenant detail: live kernel pane (polled fast, only here), fill history, memory, strategies."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Label, Static

from nika_tui.dashboard.model import FILL_MARK, BridgeView, FillView, TenantDetail, format_duration
from nika_tui.ui.screens.base import TENANT_BINDINGS, DashboardScreen
from nika_tui.ui.widgets.charts import Series, TimeChart
from nika_tui.ui.widgets.fill_bar import FillBar

PANE_LINES = 200
PANE_EVERY_S = 0.5
DETAIL_EVERY_S = 2.0


def fill_series(fill: FillView) -> Series:
    """The context fill over time, the 61% line and the compactions, as a chart."""
    return Series(
        points=fill.history,
        line=FILL_MARK,
        line_label="61% line",
        marks=tuple(c.at for c in fill.compactions),
        mark_label="compaction",
        title="context fill",
        unit="%",
        empty=(
            "no data: no fill sample recorded yet (the kernel's hooks report it)"
            if fill.percent is None
            # A reading in the hash but no history (trimmed or written by hand): say so,
            # rather than "no sample" under a bar that shows one.
            else "no fill history yet: only the current reading above"
        ),
        y_max=100.0,
    )


class TenantDetailScreen(DashboardScreen):
    """One tenant, in depth."""

    BINDINGS: ClassVar[list[BindingType]] = TENANT_BINDINGS
    HELP_TITLE = "Tenant detail"
    HELP = """The kernel's live pane on the left; on the right the context fill over time
against the **61%** line (red) with each compaction marked (magenta), the memory counts
(`m` browses the memories themselves), strategies, confirmations and the bridge. The letters
are the overview's, for this tenant."""

    class PaneReady(Message):
        """The pane capture answered."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class DetailReady(Message):
        """The detail read answered."""

        def __init__(self, detail: TenantDetail | None, error: str = "") -> None:
            super().__init__()
            self.detail = detail
            self.error = error

    def __init__(self, tenant_id: str) -> None:
        super().__init__()
        self.tenant_id = tenant_id

    def compose_body(self) -> ComposeResult:
        yield Static(self.tenant_id, id="detail-title")
        with Horizontal(id="detail-body"):
            with VerticalScroll(id="pane-scroll"):
                yield Static("", id="pane")
            with VerticalScroll(id="detail-side"):
                yield Label("Context fill", classes="section")
                yield FillBar(id="detail-fill")
                yield TimeChart(fill_series(FillView()), id="fill-history")
                yield Static("", id="compactions")
                yield Label("Memory (layer × status)", classes="section")
                yield Static("", id="memory-counts")
                yield Label("Strategies", classes="section")
                yield Static("", id="strategies")
                yield Label("Waiting for confirmation", classes="section")
                yield Static("", id="confirmations")
                for widget in (Label("Bridge", classes="section", id="bridge-label"),
                               Static("", id="bridge")):  # fmt: skip
                    widget.display = False  # shown once a read says the bridge serves it
                    yield widget

    def on_mount(self) -> None:
        super().on_mount()
        self.sub_title = self.tenant_id
        self.query_one("#pane-scroll").border_title = "kernel pane (live)"
        self._poll_pane()
        self._poll_detail()

    @work(thread=True, exclusive=True, exit_on_error=False, group="pane")
    def _poll_pane(self) -> None:
        try:
            text = self.dashboard.source.pane_preview(self.tenant_id, PANE_LINES)
        except Exception as exc:  # noqa: BLE001 - UI edge: shown in the pane
            text = f"(pane unavailable: {exc})"
        self.post_message(self.PaneReady(text))

    @work(thread=True, exclusive=True, exit_on_error=False, group="detail")
    def _poll_detail(self) -> None:
        try:
            detail = self.dashboard.source.tenant_detail(self.tenant_id, self.dashboard.clock())
        except Exception as exc:  # noqa: BLE001 - UI edge
            self.post_message(self.DetailReady(None, f"detail unavailable: {exc}"))
            return
        self.post_message(self.DetailReady(detail))

    def on_tenant_detail_screen_pane_ready(self, message: PaneReady) -> None:
        scroll = self.query_one("#pane-scroll", VerticalScroll)
        at_bottom = scroll.scroll_y >= scroll.max_scroll_y - 1
        self.query_one("#pane", Static).update(
            Text(message.text.rstrip("\n"))
            if message.text.strip()
            else Text("(no kernel pane)", style="dim")
        )
        if at_bottom:
            scroll.scroll_end(animate=False)
        self.reschedule("pane", PANE_EVERY_S, self._poll_pane)

    def on_tenant_detail_screen_detail_ready(self, message: DetailReady) -> None:
        if message.detail is not None:
            self.show_detail(message.detail)
        else:
            self.notify(message.error, severity="error")
        self.reschedule("detail", DETAIL_EVERY_S, self._poll_detail)

    def show_detail(self, d: TenantDetail) -> None:
        """Render one detail read."""
        row, k = d.row, d.row.kernel
        title = Text(f"{row.tenant_id}", style="bold")
        title.append(f" — {row.display_name} · {row.cli} · ")
        title.append(f"{k.state}", style="bold")
        title.append(f" (by {k.source or '?'}) · last event {k.last_event or '—'}")
        title.append(f" · heartbeat {format_duration(k.heartbeat_age_s)}")
        if len(k.agents) > 1:  # one window per agent: each one's own state
            title.append("\nagents: " + ", ".join(f"{cli} {state}" for cli, state in k.agents))
        for problem in (*row.problems, *d.problems):
            title.append(f"\n⚠ {problem}", style="yellow")
        self.query_one("#detail-title", Static).update(title)
        self.query_one(FillBar).fill = row.fill
        self.query_one("#fill-history", TimeChart).show(fill_series(row.fill))
        comps = Text()
        if row.fill.history:
            start, end = row.fill.history[0][0], row.fill.history[-1][0]
            n = len(row.fill.history)
            comps.append(f"{n} samples {start:%H:%M}–{end:%H:%M}\n", style="dim")
        for c in row.fill.compactions[-5:]:
            fill = f" at {c.fill:.0f}%" if c.fill is not None else ""
            comps.append(f"⟲ compaction {c.at:%Y-%m-%d %H:%M} ({c.trigger}){fill}\n")
        if not row.fill.compactions:
            comps.append("no compaction recorded", style="dim")
        self.query_one("#compactions", Static).update(comps)
        counts = Text()
        for layer, per in sorted(d.memory_counts.items()):
            cells = "  ".join(f"{status} {n}" for status, n in sorted(per.items()))
            counts.append(f"{layer:<10} {cells}\n")
        self.query_one("#memory-counts", Static).update(counts or Text("unavailable", style="dim"))
        strat = Text(", ".join(d.strategies) if d.strategies else "none available", style="cyan")
        if d.recommendation:
            strat.append(f"\n→ {d.recommendation}", style="yellow")
        if d.auto_actions:
            auto = " · ".join(f"{k}={v}" for k, v in sorted(d.auto_actions.items()))
            strat.append(f"\nauto-actions: {auto}", style="dim")
        if d.recall_params:
            strat.append(f"\nrecall: {d.recall_params}", style="dim")
        self.query_one("#strategies", Static).update(strat)
        conf = Text()
        for pending in d.confirmations:
            conf.append(f"• [{pending.kind}] {pending.title} ({pending.status})\n")
        self.query_one("#confirmations", Static).update(conf or Text("nothing", style="dim"))
        self.show_bridge(d.bridge)

    def show_bridge(self, bridge: BridgeView | None) -> None:
        """The messaging bridge section; hidden for a tenant the bridge has never served."""
        for selector in ("#bridge-label", "#bridge"):
            self.query_one(selector).display = bridge is not None
        if bridge is None:
            return
        text = Text()
        if bridge.running:
            text.append(f"serving {', '.join(bridge.gateways) or 'no gateway'}\n", style="green")
        else:
            text.append("not running (`nika bridge serve`)\n", style="yellow")
        text.append("senders: " + (", ".join(bridge.senders) or "none linked") + "\n")
        if bridge.pending:
            text.append(f"{bridge.pending} waiting for the kernel\n", style="yellow")
        for line in bridge.last:
            text.append(f"{line}\n", style="dim")
        for line in bridge.errors:
            text.append(f"⚠ {line}\n", style="red")
        self.query_one("#bridge", Static).update(text)
