"""The overview's table: a DataTable that repaints only the rows whose cells changed.

``DataTable.update_cell`` repaints the whole widget, so one changed heartbeat re-renders all
50 rows every second. :meth:`TenantTable.update_row` stores the new cells and repaints that row's
region only; the compositor keeps the other rows' lines.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

Cell = Text | str


class TenantTable(DataTable[Cell]):
    """One row per tenant; in-place row updates repaint one row."""

    def update_row(self, row_key: str, cells: Mapping[str, Cell]) -> bool:
        """Replace some cells of one row and repaint just that row.

        Args:
            row_key: The tenant id (row key).
            cells: Column key → new value (only the cells that changed).

        Returns:
            False when the row or a column does not exist (nothing changed).
        """
        key = RowKey(row_key)
        if key not in self._row_locations or not cells:
            return False
        columns = {ColumnKey(c): v for c, v in cells.items()}
        if any(c not in self._column_locations for c in columns):
            return False
        self._data[key].update(columns)
        # The render caches are keyed on this counter: bump it once for the whole batch.
        self._update_count += 1
        self.refresh_row(self.get_row_index(key))
        return True
