"""MetricRow: an insufficient metric shows its sample (n and the minimum), not a bare verdict."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Label

from nika_tui.dashboard.parse import parse_debt
from nika_tui.ui.widgets.metric_row import MetricRow
from tests.ui.pilot_helpers import run, wait_for

AUDIT = {
    "at": "2026-12-03T10:00:00+00:00",
    "metrics": [
        {
            "name": "staleness_score",
            "value": 208.0,
            "threshold": 90.0,
            "status": "insufficient",
            "sample_size": 3,
            "note": "insufficient data: n=3 of the 10 needed",
        },
        {"name": "duplicate_rate", "value": 0.01, "threshold": 0.05, "status": "ok"},
    ],
}


class RowsApp(App[None]):
    """The debt screen's metric rows, from a parsed audit."""

    def compose(self) -> ComposeResult:
        for metric in parse_debt("acme", [AUDIT]).metrics:
            yield MetricRow(metric)


def test_an_insufficient_metric_row_names_n_and_the_minimum() -> None:
    async def scenario() -> None:
        app = RowsApp()
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: len(app.query(MetricRow)) == 2, "2 rows")
            thin, ok = app.query(MetricRow)
            name = thin.query_one(".metric-name", Label)
            shown = str(name.render())
            assert "INSUFFICIENT (n=3, needs 10)" in shown
            # Drawn whole, not cut at the verdict's column width.
            assert name.size.width >= len(shown.rstrip())
            assert "n=" not in str(ok.query_one(".metric-name", Label).render())

    run(scenario())
