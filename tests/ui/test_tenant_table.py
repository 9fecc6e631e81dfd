"""TenantTable: batched row updates, minimal set_rows, renders reused for unchanged cells."""

from __future__ import annotations

from typing import Any

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import DataTable

from nika_tui.ui.widgets.tenant_table import TenantTable
from tests.ui.pilot_helpers import run

COLS = ("name", "state")


class TableApp(App[None]):
    """Just the table."""

    def compose(self) -> ComposeResult:
        table = TenantTable(id="t", cursor_type="row")
        for c in COLS:
            table.add_column(c, key=c, width=10)
        yield table


class SelectingApp(TableApp):
    """The table, recording the rows a click selects."""

    def __init__(self) -> None:
        super().__init__()
        self.selected: list[str] = []

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.selected.append(str(event.row_key.value))


def _keys(table: TenantTable) -> list[str]:
    return [str(table.coordinate_to_cell_key((i, 0)).row_key.value) for i in range(table.row_count)]


def _rows(*names: str, state: str = "idle") -> list[tuple[str, tuple[Text | str, ...]]]:
    return [(n, (Text(n, style="bold"), state)) for n in names]


def test_set_rows_removes_adds_reorders_and_keeps_the_cursor_tenant() -> None:
    async def scenario() -> None:
        app = TableApp()
        async with app.run_test(size=(40, 10)) as pilot:
            table = app.query_one(TenantTable)
            table.set_rows(_rows("a", "b", "c"), keep=None)
            table.move_cursor(row=2)  # on "c"
            await pilot.pause()
            table.set_rows(_rows("c", "d", "a"), keep="c")  # b leaves, d enters, new order
            await pilot.pause()
            assert _keys(table) == ["c", "d", "a"]
            assert table.cursor_row == 0
            assert table.get_cell("d", "state") == "idle"

    run(scenario())


def test_only_changed_cells_are_rendered_again(monkeypatch: pytest.MonkeyPatch) -> None:
    rendered: list[tuple[int, int]] = []
    base = DataTable._render_cell

    def counting(self: DataTable[Any], row: int, col: int, *args: Any, **kw: Any) -> Any:
        rendered.append((row, col))
        return base(self, row, col, *args, **kw)

    monkeypatch.setattr(DataTable, "_render_cell", counting)

    async def scenario() -> None:
        app = TableApp()
        async with app.run_test(size=(40, 10)) as pilot:
            table = app.query_one(TenantTable)
            table.set_rows(_rows("a", "b", "c"), keep=None)
            await pilot.pause()
            rendered.clear()
            # One poll changing one cell of row "c" (an equal new value elsewhere is no change).
            table.set_rows([*_rows("a", "b"), ("c", (Text("c", style="bold"), "busy"))], None)
            await pilot.pause()
            assert table.get_cell("c", "state") == "busy"
            body = {rc for rc in rendered if rc[0] >= 0 and rc[1] >= 0}
            assert body == {(2, 1)}

    run(scenario())


def test_a_reorder_reuses_rendered_lines_and_clicks_still_hit_the_right_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rendered: list[int] = []
    base = DataTable._render_line

    def counting(self: DataTable[Any], y: int, *args: Any, **kw: Any) -> Any:
        rendered.append(y)
        return base(self, y, *args, **kw)

    monkeypatch.setattr(DataTable, "_render_line", counting)
    names = [f"t{i}" for i in range(6)]

    async def scenario() -> None:
        app = SelectingApp()
        async with app.run_test(size=(40, 12)) as pilot:
            table = app.query_one(TenantTable)
            table.set_rows(_rows(*names), keep=None)
            await pilot.pause()
            rendered.clear()
            # Rows move to places of the same zebra parity, the cursor (row 0) stays put:
            # nothing about any line's look changes, only where it is.
            shuffled = ["t0", "t3", "t4", "t1", "t2", "t5"]
            table.set_rows(_rows(*shuffled), keep=None)
            await pilot.pause()
            assert _keys(table) == shuffled
            body = [y for y in rendered if 1 <= y <= len(names)]  # y 0 is the header
            assert body == [], f"lines rendered again after a pure reorder: {body}"
            # The reused lines carry their new row index: a click selects what it shows.
            await pilot.click(TenantTable, offset=(2, 1 + 2))  # third data row: moves the cursor
            await pilot.click(TenantTable, offset=(2, 1 + 2))  # on the cursor row: selects
            await pilot.pause()
            assert table.cursor_row == 2
            assert app.selected == ["t4"]

    run(scenario())
