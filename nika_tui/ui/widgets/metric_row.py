"""One memory-debt metric: value against threshold, the proposed action, and its chart.

The chart is the metric over the recent audits against its threshold, with time and value
axes; a metric never measured says "no data" rather than drawing a bar.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label

from nika_tui.dashboard.model import MetricView, format_metric
from nika_tui.ui.widgets.charts import Series, TimeChart

STATUS_STYLE = {
    "ok": "green",
    "warn": "yellow",
    "alert": "bold red",
    "unknown": "dim",
    "insufficient": "dim",  # too few samples to judge: shown, but not as a verdict
}


def metric_text(metric: MetricView) -> Text:
    """``duplicate_rate  0.072 / 0.05  ALERT`` (``no data`` when never measured).

    An insufficient metric adds its sample: ``208 / 90  INSUFFICIENT (n=3, needs 10)``.
    """
    text = Text(f"{metric.name:<24}")
    if metric.value is None:
        text.append(f"{'no data':>8} / {format_metric(metric.threshold):<8}", style="dim")
        text.append(f" {'—':<7}", style="dim")
        return text
    text.append(f"{format_metric(metric.value):>8} / {format_metric(metric.threshold):<8}")
    text.append(f" {metric.status.upper():<7}", style=STATUS_STYLE.get(metric.status, ""))
    if metric.status == "insufficient":
        # Without n and the minimum, "INSUFFICIENT" reads as a verdict on the memories.
        text.append(f" ({sample_note(metric)})", style="dim")
    return text


def sample_note(metric: MetricView) -> str:
    """``n=12, needs 50`` from the audit's note (the note itself when it has no counts)."""
    if metric.sample_n is not None and metric.min_sample is not None:
        return f"n={metric.sample_n}, needs {metric.min_sample}"
    return metric.note or "too few samples"


def action_text(metric: MetricView) -> Text:
    """The proposed action and whether auto-actions would apply it."""
    text = Text(metric.action or "no action proposed", style="" if metric.action else "dim")
    if metric.auto_mode == "autonomous":
        text.append("  [auto: applies]", style="green")
    elif metric.auto_mode == "escalate":
        text.append("  [auto: asks you]", style="yellow")
    elif metric.auto_mode == "off":
        text.append("  [auto: off]", style="dim")
    if metric.strategy:
        text.append(f"  strategy {metric.strategy}", style="cyan")
    return text


def metric_series(metric: MetricView) -> Series:
    """The metric over the recent audits against its threshold."""
    return Series(
        points=metric.series,
        line=metric.threshold,
        line_label=f"threshold {format_metric(metric.threshold)}",
        title=metric.name,
        empty="no data: no audit measured it yet (press r to run one)",
    )


class MetricRow(Vertical):
    """A metric: its line, then its chart (the debt screen has a handful, not one per tenant)."""

    DEFAULT_CSS = """
    MetricRow { height: auto; margin-bottom: 1; }
    MetricRow > Horizontal { height: 1; }
    MetricRow .metric-name { width: 50; }
    MetricRow.metric-insufficient .metric-name { width: 76; }
    MetricRow .metric-action { width: 1fr; }
    MetricRow > TimeChart { height: 9; }
    """

    def __init__(self, metric: MetricView) -> None:
        super().__init__(classes=f"metric-{metric.status}")
        self.metric = metric

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Label(metric_text(self.metric), classes="metric-name")
            yield Label(action_text(self.metric), classes="metric-action")
        yield TimeChart(metric_series(self.metric))
