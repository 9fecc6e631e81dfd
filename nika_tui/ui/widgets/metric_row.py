"""One memory-debt metric: value against threshold, sparkline of its history, action."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, Sparkline

from nika_tui.dashboard.model import MetricView, format_metric

STATUS_STYLE = {"ok": "green", "warn": "yellow", "alert": "bold red", "unknown": "dim"}


def metric_text(metric: MetricView) -> Text:
    """``duplicate_rate  0.072 / 0.05  ALERT``."""
    text = Text(f"{metric.name:<24}")
    text.append(f"{format_metric(metric.value):>8} / {format_metric(metric.threshold):<8}")
    text.append(f" {metric.status.upper():<7}", style=STATUS_STYLE.get(metric.status, ""))
    return text


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


class MetricRow(Horizontal):
    """A metric line; the debt screen has one per metric (a handful, not one per tenant)."""

    DEFAULT_CSS = """
    MetricRow { height: 2; }
    MetricRow > .metric-name { width: 50; }
    MetricRow > Sparkline { width: 20; margin: 0 1; }
    MetricRow > .metric-action { width: 1fr; }
    """

    def __init__(self, metric: MetricView) -> None:
        super().__init__(classes=f"metric-{metric.status}")
        self.metric = metric

    def compose(self) -> ComposeResult:
        yield Label(metric_text(self.metric), classes="metric-name")
        yield Sparkline(list(self.metric.history) or [0.0], summary_function=max)
        yield Label(action_text(self.metric), classes="metric-action")
