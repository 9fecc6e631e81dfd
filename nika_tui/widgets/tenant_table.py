"""The overview's table: a DataTable that re-renders only the cells whose value changed.

Every change to a ``DataTable`` (``update_cell``, ``sort``, ``add_row``...) bumps its update
counter, and all its render caches are keyed on that counter: one changed heartbeat, a sort or
a filter re-renders every visible cell through Rich (about 90% of a key press's CPU). This
subclass keeps a second cell cache keyed on the cell's *value* and position instead, so after
any change only the cells whose rendered content differs go through Rich again.

It also batches: :meth:`update_rows` applies one poll's changes with a single counter bump and
repaints only the changed rows; :meth:`set_rows` turns the table into a given list of rows by
removing / adding only the rows that left / entered and reordering the rest (the equivalent of
``DataTable.sort`` by row key), keeping the cursor on the same tenant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._two_way_dict import TwoWayDict
from textual.cache import LRUCache
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

Cell = Text | str
SegmentLines = list[list[Segment]]


def cell_identity(value: object) -> object:
    """A hashable stand-in for a cell value: equal identities render identically."""
    if isinstance(value, Text):
        return (value.plain, tuple(value.spans), str(value.style), value.justify)
    return value if isinstance(value, str) else repr(value)


class TenantTable(DataTable[Cell]):
    """One row per tenant; changes re-render only the changed cells."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Position and value → rendered lines. The position is part of the key because the
        # rendered segments carry the row/column index as mouse metadata. Set before the
        # base __init__, which already clears the caches.
        self._value_cache: LRUCache[tuple[object, ...], SegmentLines] = LRUCache(4000)
        super().__init__(*args, **kwargs)

    def _clear_caches(self) -> None:
        super()._clear_caches()
        self._value_cache.clear()

    def notify_style_update(self) -> None:
        self._value_cache.clear()
        super().notify_style_update()

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> SegmentLines:
        if row_index < 0 or column_index < 0:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        if row_key is None or column_key is None:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        key = (
            row_index,
            column_index,
            cell_identity(self._data[row_key].get(column_key)),
            base_style,
            width,
            cursor,
            hover,
            self._show_hover_cursor,
            self.show_cursor,
            self._pseudo_class_state,
            self.rows[row_key].height,
        )
        lines = self._value_cache.get(key)
        if lines is None:
            lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
            self._value_cache[key] = lines
        return lines

    def update_rows(self, changes: Mapping[str, Mapping[str, Cell]]) -> int:
        """Replace some cells of some rows; one cache bump and one repaint per changed row.

        Args:
            changes: Row key (tenant id) → column key → new value (only the changed cells).

        Returns:
            How many rows changed (rows or columns that do not exist are skipped).
        """
        changed: list[int] = []
        for row_key, cells in changes.items():
            key = RowKey(row_key)
            if key not in self._row_locations or not cells:
                continue
            columns = {ColumnKey(c): v for c, v in cells.items()}
            if any(c not in self._column_locations for c in columns):
                continue
            self._data[key].update(columns)
            changed.append(self.get_row_index(key))
        if changed:
            # The render caches are keyed on this counter: bump it once for the whole batch.
            self._update_count += 1
            for index in changed:
                self.refresh_row(index)
        return len(changed)

    def update_row(self, row_key: str, cells: Mapping[str, Cell]) -> bool:
        """Replace some cells of one row and repaint just that row.

        Args:
            row_key: The tenant id (row key).
            cells: Column key → new value (only the cells that changed).

        Returns:
            False when the row or a column does not exist (nothing changed).
        """
        return self.update_rows({row_key: cells}) == 1

    def set_rows(self, rows: Sequence[tuple[str, Sequence[Cell]]], keep: str | None) -> None:
        """Show exactly ``rows`` in this order, touching only what differs.

        Rows no longer listed are removed, new ones added, existing ones get their changed
        cells, then the order is set by row key (``DataTable.sort`` only sees cell values).

        Args:
            rows: (row key, cells in column order) in display order.
            keep: The row key the cursor should stay on, when it is still shown.
        """
        wanted = {k for k, _ in rows}
        gone = [k for k in self.rows if k.value not in wanted]
        for row_key in gone:
            self.remove_row(row_key)
        columns = [c.key.value for c in self.ordered_columns]
        updates: dict[str, dict[str, Cell]] = {}
        added = False
        for key, cells in rows:
            if RowKey(key) not in self._row_locations:
                self.add_row(*cells, key=key)
                added = True
                continue
            data = self._data[RowKey(key)]
            diff = {
                str(c): v
                for c, v in zip(columns, cells, strict=True)
                if cell_identity(data.get(ColumnKey(str(c)))) != cell_identity(v)
            }
            if diff:
                updates[key] = diff
        self.update_rows(updates)
        if gone or added:
            # The table's height changed: lay it out again, as DataTable.clear() did (without
            # it a resize arriving with the first rows could leave the header unpainted).
            self.refresh(layout=True)
        order = [k for k, _ in rows]
        shown = [self._row_locations.get_key(i) for i in range(len(order))]
        if [k.value if k is not None else None for k in shown] != order:
            self._row_locations = TwoWayDict({RowKey(k): i for i, k in enumerate(order)})
            self._update_count += 1
            self.refresh()
        if keep is not None and keep in wanted:
            index = order.index(keep)
            if self.cursor_row != index:
                self.move_cursor(row=index, animate=False)
