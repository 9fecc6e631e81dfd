"""Each of the seed's six indicators, saturated alone over its window of samples, makes the
planner plan a worker; the same samples one step short of the threshold or the window plan
nothing; and only a long calm decommissions (samples every minute on a fixed clock)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import pytest

from nika_tui.domain.tenant import Provider
from nika_tui.scale.indicators import Indicator, Sample, calm, evaluate
from nika_tui.scale.planner import PlanKind, Worker, make_plan
from tests.scale.test_planner import tenant

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
NORMAL = {"cpu_percent": 20.0, "ram_percent": 30.0, "queue_depth": 0, "load_avg": 0.5,
          "disk_percent": 20.0}  # fmt: skip


def minutes(count: int, **over: object) -> list[Sample]:
    """A sample a minute over the last ``count`` minutes, normal values but ``over``."""
    values = {**NORMAL, **over}
    return [
        Sample(at=NOW - timedelta(minutes=count - i), cores=4, **values)  # type: ignore[arg-type]
        for i in range(count + 1)
    ]


class Case(NamedTuple):
    test_id: str
    indicator: Indicator
    hot: list[Sample]
    """Saturated: the threshold passed over the whole window."""
    short: list[Sample]
    """Not saturated: at the threshold, or over it for less than the window."""


CASES = [
    Case("cpu>80%-10min", Indicator.CPU, minutes(10, cpu_percent=81.0),
         minutes(9, cpu_percent=81.0)),
    Case("ram>75%", Indicator.RAM, minutes(1, ram_percent=75.5), minutes(1, ram_percent=75.0)),
    Case("queue>50-10min", Indicator.QUEUE, minutes(10, queue_depth=51),
         minutes(10, queue_depth=50)),
    Case("load>0.85xcores-15min", Indicator.LOAD, minutes(15, load_avg=3.41),
         minutes(14, load_avg=3.41)),
    Case("pod_ttfl-p95>30s-30min", Indicator.POD_TTFL, minutes(30, ttfl_s=(31.0,)),
         minutes(30, ttfl_s=(30.0,))),
    Case("disk>80%", Indicator.DISK, minutes(1, disk_percent=80.5),
         minutes(1, disk_percent=80.0)),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.test_id)
def test_each_indicator_alone_plans_a_worker(case: Case) -> None:
    readings = evaluate(case.hot, NOW)
    assert [r.indicator for r in readings if r.saturated] == [case.indicator]
    plan = make_plan(tenant(Provider.SCALEWAY), readings, calm(case.hot, NOW), [], NOW, "p1")
    assert plan.kind is PlanKind.SCALE_OUT and plan.provider is Provider.SCALEWAY
    assert any(r.startswith(case.indicator.value) for r in plan.reasons), plan.reasons

    cool = evaluate(case.short, NOW)
    assert not any(r.saturated for r in cool)
    plan = make_plan(tenant(Provider.SCALEWAY), cool, calm(case.short, NOW), [], NOW, "p2")
    assert plan.kind is PlanKind.NONE


def test_a_worker_is_decommissioned_only_after_30_calm_minutes() -> None:
    workers = [Worker("acme", Provider.SCALEWAY, "i-1", "p0", "2026-12-03T09:00", 0.11)]
    config = tenant(Provider.SCALEWAY)

    def plan(samples: list[Sample]) -> PlanKind:
        return make_plan(config, evaluate(samples, NOW), calm(samples, NOW), workers, NOW, "p").kind

    assert plan(minutes(31)) is PlanKind.DECOMMISSION
    assert plan(minutes(29)) is PlanKind.NONE  # calm, but not for long enough
    # Under the threshold yet over 60 % of it (the band): no decommission, no scale-out.
    for band in ({"cpu_percent": 50.0}, {"ram_percent": 46.0}, {"queue_depth": 31},
                 {"load_avg": 2.1}):  # fmt: skip
        assert plan(minutes(31, **band)) is PlanKind.NONE, band
