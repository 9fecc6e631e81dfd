"""Windows over samples: "for 10 min" means covered and over for the whole window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import pytest

from nika_tui.scale.indicators import Indicator, Sample, calm, evaluate, p95

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def series(minutes: int, every_s: int = 60, **values: object) -> list[Sample]:
    """Samples every ``every_s`` over the last ``minutes`` with constant ``values``."""
    count = minutes * 60 // every_s
    return [
        Sample(at=NOW - timedelta(seconds=every_s * (count - i)), cores=4, **values)  # type: ignore[arg-type]
        for i in range(count + 1)
    ]


class Case(NamedTuple):
    test_id: str
    samples: list[Sample]
    indicator: Indicator
    saturated: bool


CASES = [
    Case("cpu-11min-over", series(11, cpu_percent=90.0), Indicator.CPU, True),
    Case("cpu-8min-only", series(8, cpu_percent=90.0), Indicator.CPU, False),
    Case("cpu-at-threshold", series(11, cpu_percent=80.0), Indicator.CPU, False),
    Case("ram-latest-over", series(1, ram_percent=76.0), Indicator.RAM, True),
    Case("ram-under", series(1, ram_percent=70.0), Indicator.RAM, False),
    Case("queue-over-10min", series(10, queue_depth=51), Indicator.QUEUE, True),
    Case("queue-50-is-not-over", series(10, queue_depth=50), Indicator.QUEUE, False),
    Case("load-over-0.85-cores-15min", series(15, load_avg=3.5), Indicator.LOAD, True),
    Case("load-under-0.85-cores", series(15, load_avg=3.3), Indicator.LOAD, False),
    Case("load-over-14min-only", series(14, load_avg=3.5)[:-2], Indicator.LOAD, False),
    Case("disk-reached", series(1, disk_percent=81.0), Indicator.DISK, True),
    Case("gappy-cpu", series(11, every_s=300, cpu_percent=95.0), Indicator.CPU, False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.test_id)
def test_indicator_windows(case: Case) -> None:
    readings = {r.indicator: r for r in evaluate(case.samples, NOW)}
    assert readings[case.indicator].saturated is case.saturated


def test_one_dip_breaks_the_cpu_window() -> None:
    samples = series(11, cpu_percent=90.0)
    dipped = [*samples[:5], Sample(samples[5].at, 4, cpu_percent=40.0), *samples[6:]]
    readings = {r.indicator: r for r in evaluate(dipped, NOW)}
    assert readings[Indicator.CPU].saturated is False
    assert readings[Indicator.CPU].value == 40.0


def test_pod_ttfl_p95_over_30_min() -> None:
    samples = series(30, cpu_percent=10.0)
    slow = [Sample(s.at, 4, ttfl_s=(40.0,)) for s in samples[-20:]]
    fast = [Sample(s.at, 4, ttfl_s=(2.0,)) for s in samples[-2:]]
    assert {r.indicator: r for r in evaluate(slow, NOW)}[Indicator.POD_TTFL].saturated
    assert not {r.indicator: r for r in evaluate(fast, NOW)}[Indicator.POD_TTFL].saturated


def test_p95_nearest_rank() -> None:
    assert p95([float(i) for i in range(1, 101)]) == 95.0
    assert p95([]) is None


def test_calm_needs_the_whole_window_under_the_lower_band() -> None:
    quiet = series(31, cpu_percent=20.0, ram_percent=30.0, queue_depth=0, load_avg=0.5)
    assert calm(quiet, NOW)
    short = series(20, cpu_percent=20.0, ram_percent=30.0, queue_depth=0, load_avg=0.5)
    assert not calm(short, NOW)
    # 60% of 80% is 48%: 55% CPU is neither saturated nor calm (the hysteresis band).
    middling = series(31, cpu_percent=55.0, ram_percent=30.0, queue_depth=0, load_avg=0.5)
    assert not calm(middling, NOW)
    assert not {r.indicator: r for r in evaluate(middling, NOW)}[Indicator.CPU].saturated
