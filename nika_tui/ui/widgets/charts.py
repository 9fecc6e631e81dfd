"""Charts with axes (textual-plotext): a series over time against a line, or "no data".

:class:`TimeChart` draws one series over wall-clock time with a horizontal reference line
(the 61% compaction line, a debt metric's threshold) and vertical marks (compactions). With no
points it draws no axes at all but says "no data" and why: an empty frame, a full bar or a
flat sparkline would each read as a measurement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from rich.text import Text
from textual.app import RenderResult
from textual_plotext import PlotextPlot

MAX_TICKS = 5


@dataclass(frozen=True, slots=True)
class Series:
    """What a :class:`TimeChart` shows."""

    points: tuple[tuple[datetime, float], ...] = ()
    line: float | None = None
    """The reference line (threshold, 61%); drawn dashed across the chart."""
    line_label: str = ""
    marks: tuple[datetime, ...] = ()
    """Events drawn as vertical lines (compactions)."""
    mark_label: str = ""
    title: str = ""
    unit: str = ""
    empty: str = "no data"
    """What the chart says when there are no points."""
    y_max: float | None = None


def time_ticks(points: Sequence[datetime], n: int = MAX_TICKS) -> tuple[list[float], list[str]]:
    """Up to ``n`` evenly spaced x ticks over ``points``, labelled ``HH:MM`` (or ``MM-DD``).

    Returns:
        ``(positions in epoch seconds, labels)``.
    """
    if not points:
        return [], []
    lo, hi = points[0].timestamp(), points[-1].timestamp()
    span = hi - lo
    fmt = "%H:%M" if span <= 86400 else "%m-%d %H:%M" if span <= 3 * 86400 else "%m-%d"
    if span <= 0:
        return [lo], [points[0].strftime(fmt)]
    steps = min(n, len(points)) - 1 or 1
    ticks = [lo + span * i / steps for i in range(steps + 1)]
    labels = [datetime.fromtimestamp(t, tz=points[0].tzinfo).strftime(fmt) for t in ticks]
    return ticks, labels


class TimeChart(PlotextPlot):
    """A series over time with axes, a reference line and event marks."""

    DEFAULT_CSS = """
    TimeChart { height: 12; width: 1fr; }
    """

    def __init__(self, series: Series | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.series = series or Series()
        self._fit()

    def _fit(self) -> None:
        # "no data" is a line or two of text, not an empty frame of the chart's height.
        self.styles.height = None if self.series.points else 2

    def show(self, series: Series) -> None:
        """Replace what is drawn (a no-op when nothing changed)."""
        if series != self.series:
            self.series = series
            self._fit()
            self.refresh(layout=True)

    @property
    def has_data(self) -> bool:
        """Whether there is anything to plot."""
        return bool(self.series.points)

    def render(self) -> RenderResult:
        """The chart, or the "no data" line."""
        s = self.series
        if not s.points:
            return Text(f"{s.title}: {s.empty}" if s.title else s.empty, style="dim italic")
        plt = self.plt
        plt.clear_figure()
        xs = [at.timestamp() for at, _ in s.points]
        ys = [v for _, v in s.points]
        legend = s.title + (f" ({s.unit})" if s.unit else "")
        plt.plot(xs, ys, marker="braille", label=legend or None)
        lo_x, hi_x = (xs[0] - 1, xs[-1] + 1) if xs[0] == xs[-1] else (xs[0], xs[-1])
        if s.line is not None:
            plt.hline(s.line, "red")
        for mark in s.marks:
            if lo_x <= mark.timestamp() <= hi_x:
                plt.vline(mark.timestamp(), "magenta")
        ticks, labels = time_ticks([at for at, _ in s.points])
        plt.xticks(ticks, labels)
        plt.xlim(lo_x, hi_x)
        # Headroom above the reference line: the legend sits on the top row.
        top = s.y_max if s.y_max is not None else (max([*ys, s.line or 0.0]) * 1.4 or 1.0)
        plt.ylim(0, top)
        # The reference line gets a tick of its own: plotext draws a line on the nearest row,
        # and with only evenly spaced ticks 61% would read as 50%.
        # No other tick near it: two ticks on one row print either label, at random.
        yticks = sorted({0.0, top, s.line if s.line is not None else top / 2})
        plt.yticks(yticks, [format(t, ".3g") for t in yticks])
        notes = []
        if s.line is not None:
            notes.append(f"── {s.line_label or format(s.line, 'g')}")
        if s.marks:
            notes.append(f"│ {s.mark_label or 'event'} ×{len(s.marks)}")
        plt.title("  ".join(notes))
        return super().render()
