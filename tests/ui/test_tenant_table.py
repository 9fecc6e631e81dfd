"""TenantTable: batched row updates, minimal set_rows, renders reused for unchanged cells."""

from __future__ import annotations

from typing import Any

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import DataTable

from nika_tui.widgets.tenant_table import TenantTable
from tests.ui.pilot_helpers import run

COLS = ("name", "state")


class TableApp(App[None]):
    """Just the table."""

    def compose(self) -> ComposeResult:
        table = TenantTable(id="t", cursor_type="row")
        for c in COLS:
            table.add_column(c, key=c, width=10)
        yield table


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
