"""The seed's saturation indicators (« Indicateurs déclencheurs »), as pure windows over samples.

| indicator | saturated when | seed's strategy |
|---|---|---|
| ``cpu`` | every sample > 80 % for 10 min | scale B |
| ``ram`` | latest sample > 75 % | scale B |
| ``queue`` | Redis ingest queue > N for 10 min | scale B (worker spawn) |
| ``load`` | load average > 0.85 × cores for 15 min | scale B + compression A |
| ``pod_ttfl`` | p95 of kernels' time-to-first-line > 30 s over 30 min | scale B |
| ``disk`` | vector-store disk > 80 % (reached) | compression A (urgent) |

"For 10 min" means the samples cover the whole window (one sample at or before its start, at
most ``max_gap_s`` earlier; the newest at most ``max_gap_s`` old; no two consecutive ones further
apart) and every one of them is over the threshold: a service that just started, or that
missed samples, never reads as saturated. The calm side (hysteresis) uses lower thresholds
over ``calm_s``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum


class Indicator(StrEnum):
    CPU = "cpu"
    RAM = "ram"
    QUEUE = "queue"
    LOAD = "load"
    POD_TTFL = "pod_ttfl"
    DISK = "disk"


@dataclass(frozen=True, slots=True)
class Sample:
    """One measurement of the machine the service runs on (``None``: not measurable)."""

    at: datetime
    cores: int
    cpu_percent: float | None = None
    ram_percent: float | None = None
    queue_depth: int | None = None
    load_avg: float | None = None
    disk_percent: float | None = None
    ttfl_s: tuple[float, ...] = field(default_factory=tuple)
    """Kernels' pod_ttfl values first seen since the previous sample."""


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Where saturation and calm start; defaults are the seed's."""

    cpu_percent: float = 80.0
    cpu_window_s: float = 600.0
    ram_percent: float = 75.0
    queue_depth: int = 50
    queue_window_s: float = 600.0
    load_per_core: float = 0.85
    load_window_s: float = 900.0
    ttfl_p95_s: float = 30.0
    ttfl_window_s: float = 1800.0
    disk_percent: float = 80.0
    #: Hysteresis: calm when every indicator stays under this fraction of its threshold.
    calm_fraction: float = 0.6
    calm_s: float = 1800.0
    max_gap_s: float = 180.0


@dataclass(frozen=True, slots=True)
class Reading:
    """One indicator's verdict."""

    indicator: Indicator
    value: float | None
    threshold: float
    window_s: float
    saturated: bool
    strategy: str

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "indicator": self.indicator.value,
            "value": None if self.value is None else round(self.value, 3),
            "threshold": round(self.threshold, 3),
            "window_s": self.window_s,
            "saturated": self.saturated,
            "strategy": self.strategy,
        }


def _window(
    samples: Sequence[Sample], now: datetime, window_s: float, before_s: float = 0.0
) -> list[Sample]:
    start = now - timedelta(seconds=window_s + before_s)
    return [s for s in samples if start <= s.at <= now]


def _covers(inside: Sequence[Sample], now: datetime, window_s: float, max_gap_s: float) -> bool:
    if not inside:
        return False
    start = now - timedelta(seconds=window_s)
    if inside[0].at > start:  # the value must hold since before the window began
        return False
    if (now - inside[-1].at).total_seconds() > max_gap_s:
        return False
    return all((b.at - a.at).total_seconds() <= max_gap_s for a, b in itertools.pairwise(inside))


def sustained(
    samples: Sequence[Sample],
    now: datetime,
    window_s: float,
    value: Callable[[Sample], float | None],
    over: Callable[[float], bool],
    max_gap_s: float,
) -> tuple[bool, float | None]:
    """Whether ``over(value(s))`` holds for every sample covering the last ``window_s``.

    Returns:
        ``(holds, lowest value in the window)``; samples with no value break the coverage.
    """
    inside = [s for s in _window(samples, now, window_s, max_gap_s) if value(s) is not None]
    values = [v for s in inside if (v := value(s)) is not None]
    low = min(values) if values else None
    if not _covers(inside, now, window_s, max_gap_s):
        return False, low
    return all(over(v) for v in values), low


def p95(values: Sequence[float]) -> float | None:
    """The 95th percentile (nearest rank), ``None`` for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def _latest(samples: Sequence[Sample], value: Callable[[Sample], float | None]) -> float | None:
    for sample in reversed(samples):
        if (v := value(sample)) is not None:
            return v
    return None


def evaluate(
    samples: Sequence[Sample], now: datetime, t: Thresholds | None = None
) -> list[Reading]:
    """Every indicator's reading at ``now`` (samples oldest first)."""
    t = t or Thresholds()
    cores = samples[-1].cores if samples else 1
    load_limit = t.load_per_core * cores
    cpu, cpu_low = sustained(
        samples,
        now,
        t.cpu_window_s,
        lambda s: s.cpu_percent,
        lambda v: v > t.cpu_percent,
        t.max_gap_s,
    )
    queue, queue_low = sustained(
        samples,
        now,
        t.queue_window_s,
        lambda s: None if s.queue_depth is None else float(s.queue_depth),
        lambda v: v > t.queue_depth,
        t.max_gap_s,
    )
    load, load_low = sustained(
        samples,
        now,
        t.load_window_s,
        lambda s: s.load_avg,
        lambda v: v > load_limit,
        t.max_gap_s,
    )
    ttfl_values = [v for s in _window(samples, now, t.ttfl_window_s) for v in s.ttfl_s]
    ttfl = p95(ttfl_values)
    ram = _latest(samples, lambda s: s.ram_percent)
    disk = _latest(samples, lambda s: s.disk_percent)
    return [
        Reading(Indicator.CPU, cpu_low, t.cpu_percent, t.cpu_window_s, cpu, "scale"),
        Reading(
            Indicator.RAM, ram, t.ram_percent, 0, ram is not None and ram > t.ram_percent, "scale"
        ),
        Reading(Indicator.QUEUE, queue_low, t.queue_depth, t.queue_window_s, queue, "scale"),
        Reading(Indicator.LOAD, load_low, load_limit, t.load_window_s, load, "scale+compress"),
        Reading(
            Indicator.POD_TTFL,
            ttfl,
            t.ttfl_p95_s,
            t.ttfl_window_s,
            ttfl is not None and ttfl > t.ttfl_p95_s,
            "scale",
        ),
        Reading(
            Indicator.DISK,
            disk,
            t.disk_percent,
            0,
            disk is not None and disk > t.disk_percent,
            "compress",
        ),
    ]


def calm(samples: Sequence[Sample], now: datetime, t: Thresholds | None = None) -> bool:
    """True when every scale indicator stayed under ``calm_fraction`` of its threshold for
    ``calm_s`` (the hysteresis band that decommissioning waits for)."""
    t = t or Thresholds()
    f = t.calm_fraction
    cores = samples[-1].cores if samples else 1
    checks: list[tuple[Callable[[Sample], float | None], float]] = [
        (lambda s: s.cpu_percent, t.cpu_percent * f),
        (lambda s: s.ram_percent, t.ram_percent * f),
        (lambda s: None if s.queue_depth is None else float(s.queue_depth), t.queue_depth * f),
        (lambda s: s.load_avg, t.load_per_core * cores * f),
    ]
    for value, limit in checks:
        held, low = sustained(samples, now, t.calm_s, value, lambda v: True, t.max_gap_s)
        highest = max(
            (v for s in _window(samples, now, t.calm_s) if (v := value(s)) is not None),
            default=None,
        )
        if not held or low is None or highest is None or highest >= limit:
            return False
    ttfl = p95([v for s in _window(samples, now, t.calm_s) for v in s.ttfl_s])
    return ttfl is None or ttfl < t.ttfl_p95_s * f
