"""Overview: one DataTable row per tenant, sorted and filtered, with the kernel keys."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.widgets import DataTable, Static
from textual.widgets.data_table import RowKey

from nika_tui.dashboard.model import (
    STATE_ORDER,
    STATUS_RANK,
    UNREADABLE,
    Snapshot,
    TenantRow,
    format_duration,
)
from nika_tui.ui.screens.base import TENANT_BINDINGS, DashboardScreen
from nika_tui.ui.widgets.fill_bar import fill_bar_text, forecast_text
from nika_tui.ui.widgets.tenant_table import TenantTable

STATE_FILTERS: tuple[str, ...] = ("", "working", "waiting-input", "idle", "exited", "error")
STATE_STYLE = {
    "working": "green",
    "waiting-input": "bold yellow",
    "starting": "cyan",
    "idle": "blue",
    "exited": "dim",
    "error": "bold red",
    UNREADABLE: "italic red",
    "unknown": "dim",
}
DEBT_ICON = {"ok": "✓", "warn": "▲", "alert": "✖", "unknown": "·"}
DEBT_STYLE = {"ok": "green", "warn": "yellow", "alert": "bold red", "unknown": "dim"}

SORTS: dict[str, Callable[[TenantRow], Any]] = {
    "needs me": lambda r: (
        not r.needs_me,
        STATE_ORDER.index(r.kernel.state) if r.kernel.state in STATE_ORDER else 99,
        r.tenant_id,
    ),
    "tenant": lambda r: r.tenant_id,
    "state": lambda r: (
        STATE_ORDER.index(r.kernel.state) if r.kernel.state in STATE_ORDER else 99,
        r.tenant_id,
    ),
    "fill": lambda r: (-(r.fill.percent or -1.0), r.tenant_id),
    "debt": lambda r: (-STATUS_RANK.get(r.debt_status, 0), r.tenant_id),
}
COLUMNS: tuple[tuple[str, str, int], ...] = (
    # Fixed widths: live values never make the table reflow under the cursor. Few columns:
    # every refresh re-renders each visible cell, so merged cells keep 50 tenants cheap.
    # Ordered by what a person must see first: the row is 139 cells, and at 120 columns the
    # review / confirmation counts (then last) were off-screen; at 80 the fill and debt too.
    ("tenant", "Tenant", 13),
    ("state", "Kernel (by)", 22),
    ("decisions", "Rev/Conf", 8),
    ("fill", "Context (│ = 61%) · forecast", 33),
    ("debt", "Debt (worst)", 22),
    ("usage", "Tok·cost", 8),  # today: % of quotas.tokens_per_day, estimated cost
    ("beat", "Beat", 6),
    ("cli", "CLI", 11),
)
_SORT_BY_COLUMN = {"tenant": "tenant", "state": "state", "fill": "fill", "debt": "debt"}


def _count(n: int) -> Text:
    return Text(str(n), style="bold yellow") if n else Text("0", style="dim")


def beat_text(age_s: float | None, stale: bool, state: str) -> Text:
    """Heartbeat age in coarse steps: a live kernel's beat does not redraw the table each second."""
    if age_s is None:
        shown = "stale" if stale and state not in ("unknown", "exited") else "—"
        return Text(shown, style="dim")
    for limit, label in ((5, "<5s"), (10, "<10s"), (30, "<30s"), (60, "<1m")):
        if age_s < limit:
            return Text(label, style="red" if stale else "")
    return Text(format_duration(age_s), style="red" if stale else "")


def usage_text(row: TenantRow) -> Text:
    """Today's share of the token quota and estimated cost: ``48% 1.23`` (billing, issue 18)."""
    if row.tokens_today is None or not row.tokens_limit:
        return Text("—", style="dim")
    pct = 100.0 * row.tokens_today / row.tokens_limit
    style = "bold red" if pct >= 100 else "yellow" if pct >= 80 else ""
    text = Text(f"{pct:.0f}%", style=style)
    text.append(f" {row.cost_today:.2f}" if row.cost_today else " 0", style="dim")
    return text


def row_cells(row: TenantRow) -> tuple[Text | str, ...]:
    """The cells of one tenant's row, in :data:`COLUMNS` order."""
    k = row.kernel
    state = Text("● " if row.needs_me else "  ", style="bold yellow")
    state.append(k.state, style=STATE_STYLE.get(k.state, ""))
    if k.source:
        state.append(f" ({k.source})", style="dim")
    fill = fill_bar_text(row.fill)
    fill.append("  ")
    fill.append_text(forecast_text(row.fill))
    icon = DEBT_ICON.get(row.debt_status, "?")
    debt = Text(
        f"{icon} {row.debt_worst or row.debt_status}", style=DEBT_STYLE.get(row.debt_status, "")
    )
    decisions = _count(row.review_count)
    decisions.append(" / ", style="dim")
    decisions.append_text(_count(row.confirmation_count))
    tenant = Text(row.tenant_id, style="bold")
    if row.problems:
        tenant.append(" ⚠", style="red")
    return (
        tenant,
        state,
        decisions,
        fill,
        debt,
        usage_text(row),
        beat_text(k.heartbeat_age_s, k.stale, k.state),
        row.cli or "—",
    )


class OverviewScreen(DashboardScreen):
    """Every tenant at a glance."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *TENANT_BINDINGS,
        Binding("f", "filter_state", "Filter"),
        Binding("n", "toggle_needs_me", "Needs me"),
        Binding("o", "cycle_sort", "Sort"),
    ]

    state_filter: reactive[str] = reactive("")
    """Show only kernels in this state ('' = all)."""
    needs_me: reactive[bool] = reactive(False)
    """Show only tenants waiting for a person."""
    sort_key: reactive[str] = reactive("needs me")
    """One of :data:`SORTS`."""

    HELP_TITLE = "Overview"
    HELP = """One row per tenant: kernel state (and whether a *hook* or the *pane* decided
it), CLI, context fill with the **61%** compaction mark (`│`) and the time until it is reached,
the worst memory-debt metric, review-queue and confirmation counts, heartbeat age.
A `●` marks a tenant that needs you. The letters act on the tenant under the cursor; the
tenant detail answers the same ones. Click a header to sort."""

    def __init__(self) -> None:
        super().__init__()
        self._rows: dict[str, TenantRow] = {}
        self._cells: dict[str, tuple[Text | str, ...]] = {}
        self._pending: Snapshot | None = None
        self._painted = False
        """Rows were drawn once: the first frame with data is behind us."""

    def compose_body(self) -> ComposeResult:
        yield Static(self._filters_text(), id="overview-filters")
        # No zebra stripes: with them a row that moves by one place (a sort, a filter) looks
        # different and must be drawn again; without, moved rows reuse their drawn lines.
        table = TenantTable(id="tenants", cursor_type="row", zebra_stripes=False)
        for key, label, width in COLUMNS:
            table.add_column(label, key=key, width=width)
        yield table
        yield Static("no tenant matches the filter", id="overview-empty")

    def on_mount(self) -> None:
        self._describe_filters()
        super().on_mount()

    def on_snapshot(self, snapshot: Snapshot) -> None:
        if not self.is_current:
            # Covered by another screen: nothing of the table is visible, keep only the latest
            # snapshot and draw it when the overview comes back.
            self._pending = snapshot
            return
        self._pending = None
        self._render_rows(snapshot)

    def _warm_up_if_shown(self) -> None:
        # Not under the welcome screen (first run): its button must answer at once, and the
        # import blocked the UI thread for 0.2-0.6 s (decision 448). Done on resume instead.
        if self.app.screen is self:  # not `is_current`: true behind the welcome too
            self.dashboard.warm_up_once()

    def on_screen_resume(self) -> None:
        # Back from the welcome screen with rows drawn: warm up after this frame. Not before
        # the first rows (the first show is a resume too): that frame must not wait for it.
        if not self.dashboard.warmed_up and self._painted and self._pending is None:
            self.call_after_refresh(self._warm_up_if_shown)
        if self._pending is not None:
            snapshot, self._pending = self._pending, None
            self._render_rows(snapshot)

    def visible_rows(self, snapshot: Snapshot) -> list[TenantRow]:
        """Rows after the filters, in the current sort order."""
        rows = [
            r
            for r in snapshot.tenants
            if (not self.state_filter or r.kernel.state == self.state_filter)
            and (not self.needs_me or r.needs_me)
        ]
        return sorted(rows, key=SORTS[self.sort_key])

    def _cells_of(self, row: TenantRow) -> tuple[Text | str, ...]:
        """The row's cells, rebuilt only when the tenant's row changed since the last poll."""
        if self._rows.get(row.tenant_id) != row or row.tenant_id not in self._cells:
            self._rows[row.tenant_id] = row
            self._cells[row.tenant_id] = row_cells(row)
        return self._cells[row.tenant_id]

    def _render_rows(self, snapshot: Snapshot) -> None:
        table = self.query_one("#tenants", TenantTable)
        rows = self.visible_rows(snapshot)
        # One batched table update per poll or key: rows that left are removed, new ones
        # added, changed cells replaced, the order set by key; unchanged cells keep their
        # rendering (TenantTable caches it by value), cursor stays on the same tenant.
        table.set_rows(
            [(r.tenant_id, self._cells_of(r)) for r in rows], self.dashboard.selected_tenant
        )
        present = {r.tenant_id for r in snapshot.tenants}
        for gone in [t for t in self._rows if t not in present]:
            del self._rows[gone]
            self._cells.pop(gone, None)
        self._painted = True
        if not self.dashboard.warmed_up:
            # After this frame is painted: the kernel manager, which the frame did not need.
            self.call_after_refresh(self._warm_up_if_shown)
        empty = self.query_one("#overview-empty")
        show_empty = not rows and bool(snapshot.tenants)
        if empty.display != show_empty:  # an unchanged assignment still costs a style pass
            empty.display = show_empty
        self._sync_selection()

    def _sync_selection(self) -> None:
        table = self.query_one("#tenants", DataTable)
        if table.row_count:
            key: RowKey = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
            self.dashboard.selected_tenant = key.value
        elif self.dashboard.snapshot is not None and not self.dashboard.snapshot.tenants:
            self.dashboard.selected_tenant = None

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        # While the table is being rebuilt a highlight can arrive for a row already gone.
        key = getattr(event.row_key, "value", None)
        if key is not None:
            self.dashboard.selected_tenant = key

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        key = getattr(event.row_key, "value", None)
        if key is not None:
            self.dashboard.selected_tenant = key
            self.dashboard.action_detail()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        sort = _SORT_BY_COLUMN.get(str(event.column_key.value))
        if sort:
            self.sort_key = sort

    def _filters_text(self) -> str:
        state = self.state_filter or "all states"
        needs = " · needs me only" if self.needs_me else ""
        return f"filter: {state}{needs} · sort: {self.sort_key}   (f filter · n needs me · o sort)"

    def _describe_filters(self) -> None:
        # The line is composed with its text (one line); later changes keep it one line, so
        # they skip the layout pass (which would re-render the whole screen on every key).
        self.query_one("#overview-filters", Static).update(self._filters_text(), layout=False)

    def _refilter(self) -> None:
        if not self.is_mounted:
            return
        self._describe_filters()
        if self.dashboard.snapshot is not None:
            self._render_rows(self.dashboard.snapshot)

    def watch_state_filter(self) -> None:
        self._refilter()

    def watch_needs_me(self) -> None:
        self._refilter()

    def watch_sort_key(self) -> None:
        self._refilter()

    def action_filter_state(self) -> None:
        """Cycle through the state filters."""
        i = STATE_FILTERS.index(self.state_filter) if self.state_filter in STATE_FILTERS else 0
        self.state_filter = STATE_FILTERS[(i + 1) % len(STATE_FILTERS)]

    def action_toggle_needs_me(self) -> None:
        """Only the tenants that need a person."""
        self.needs_me = not self.needs_me

    def action_cycle_sort(self) -> None:
        """Next sort order."""
        keys = list(SORTS)
        self.sort_key = keys[(keys.index(self.sort_key) + 1) % len(keys)]
