"""Context fill as a bar with the 61% compaction line marked.

:func:`fill_bar_text` renders into a DataTable cell (one row per tenant, no widget per tenant);
:class:`FillBar` is the same bar as a widget for the detail screen.
"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from nika_tui.dashboard.model import FILL_MARK, FillView, format_duration


def fill_style(percent: float) -> str:
    """Green under 45%, yellow up to the line, red past it."""
    if percent >= FILL_MARK:
        return "bold red"
    if percent >= 45:
        return "yellow"
    return "green"


def fill_bar_text(fill: FillView, width: int = 20, mark: float = FILL_MARK) -> Text:
    """``█████░░░│░░░ 48%``: the bar, the 61% mark (``│``) and the percentage.

    Args:
        fill: The fill view (``percent`` may be ``None``: nothing measured yet).
        width: Cells of the bar itself.
        mark: Where the compaction line sits, in percent.

    Returns:
        A styled rich Text.
    """
    if fill.unreadable:
        return Text("unreadable", style="italic red")
    if fill.percent is None:
        return Text("─" * width + "    —", style="dim")
    pct = max(0.0, min(100.0, fill.percent))
    filled = round(pct / 100 * width)
    mark_at = min(width - 1, int(mark / 100 * width))
    style = fill_style(pct)
    # A handful of spans, not one per cell: the overview re-renders 50 of these a second.
    before = "".join("█" if i < filled else "░" for i in range(mark_at))
    after = "".join("█" if i < filled else "░" for i in range(mark_at + 1, width))
    text = Text()
    text.append(before.rstrip("░"), style=style)
    text.append(before[len(before.rstrip("░")) :], style="dim")
    text.append("│", style="bold magenta")
    text.append(after.rstrip("░"), style=style)
    text.append(after[len(after.rstrip("░")) :], style="dim")
    text.append(f" {pct:3.0f}%", style=style)
    return text


def forecast_text(fill: FillView) -> Text:
    """Time until the 61% line: ``12m``, ``now`` past it, ``—`` when not rising."""
    if fill.percent is not None and fill.percent >= FILL_MARK:
        return Text("past 61%", style="bold red")
    if fill.forecast_s is None:
        return Text("—", style="dim")
    return Text(f"61% in {format_duration(fill.forecast_s)}")


class FillBar(Widget):
    """A one-line fill bar with the 61% mark, sized to its container."""

    DEFAULT_CSS = """
    FillBar { height: 1; width: 1fr; }
    """

    fill: reactive[FillView] = reactive(FillView, layout=False)
    """The fill shown; assign a new :class:`FillView` to update."""

    def render(self) -> Text:
        """The bar across the widget's width, plus the forecast; "no data" without a sample."""
        if self.fill.percent is None and not self.fill.unreadable:
            return Text("no data: the kernel has not reported its context fill", style="dim")
        bar = fill_bar_text(self.fill, width=max(10, self.size.width - 22))
        bar.append("  ")
        bar.append_text(forecast_text(self.fill))
        return bar
