"""Estimators with confidence intervals (pure)."""

from __future__ import annotations

import random
from typing import NamedTuple

import pytest

from nika_tui.domain.sampling import (
    estimate_proportion,
    finite_population_factor,
    mean_interval,
    percentile,
    percentile_estimate,
    reservoir_sample,
    sample_size_for_proportion,
    sample_without_replacement,
    wilson_interval,
)


class WilsonCase(NamedTuple):
    test_id: str
    successes: int
    n: int
    low: float
    high: float


# Reference values: Wilson score interval, z = 1.96 (e.g. Newcombe 1998, table I).
WILSON = [
    WilsonCase("81_of_263", 81, 263, 0.2553, 0.3662),
    WilsonCase("15_of_148", 15, 148, 0.0624, 0.1605),
    WilsonCase("0_of_20", 0, 20, 0.0, 0.1611),
    WilsonCase("20_of_20", 20, 20, 0.8389, 1.0),
]


@pytest.mark.parametrize("case", WILSON, ids=[c.test_id for c in WILSON])
def test_wilson_matches_reference_values(case: WilsonCase) -> None:
    low, high = wilson_interval(case.successes, case.n)
    assert low == pytest.approx(case.low, abs=5e-4)
    assert high == pytest.approx(case.high, abs=5e-4)


def test_wilson_stays_inside_unit_interval_and_covers_the_estimate() -> None:
    for n in (1, 5, 50, 500):
        for k in range(0, n + 1, max(1, n // 10)):
            low, high = wilson_interval(k, n)
            assert 0.0 <= low <= k / n <= high <= 1.0


def test_census_has_zero_width_interval() -> None:
    est = estimate_proportion(7, 100, population=100)
    assert (est.low, est.value, est.high) == (0.07, 0.07, 0.07)
    assert est.exact


def test_finite_population_correction_narrows_the_interval() -> None:
    wide = estimate_proportion(50, 1000)
    narrow = estimate_proportion(50, 1000, population=1500)
    assert narrow.high - narrow.low < wide.high - wide.low
    assert finite_population_factor(1000, None) == 1.0


def test_invalid_counts_are_refused() -> None:
    with pytest.raises(ValueError):
        wilson_interval(5, 3)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_wilson_covers_the_true_rate_about_95_percent_of_the_time() -> None:
    rng = random.Random(11)
    p, n, trials = 0.07, 400, 2000
    covered = 0
    for _ in range(trials):
        k = sum(rng.random() < p for _ in range(n))
        low, high = wilson_interval(k, n)
        covered += low <= p <= high
    assert 0.93 <= covered / trials <= 0.97


class SizeCase(NamedTuple):
    test_id: str
    margin: float
    p: float
    population: int | None
    expected: int


SIZES = [
    SizeCase("worst_case_2pt", 0.02, 0.5, None, 2401),
    SizeCase("five_percent_1pt", 0.01, 0.05, None, 1825),
    SizeCase("small_population", 0.02, 0.5, 1000, 707),
    SizeCase("capped_at_population", 0.001, 0.5, 50, 50),
]


@pytest.mark.parametrize("case", SIZES, ids=[c.test_id for c in SIZES])
def test_sample_size_for_proportion(case: SizeCase) -> None:
    assert sample_size_for_proportion(case.margin, case.p, population=case.population) == (
        case.expected
    )


def test_sample_size_refuses_bad_margin() -> None:
    with pytest.raises(ValueError):
        sample_size_for_proportion(0.0)


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 95) == 95.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([5.0], 95) == 5.0
    est = percentile_estimate(values, 95)
    assert est.low <= est.value <= est.high
    with pytest.raises(ValueError):
        percentile([], 95)


def test_mean_interval() -> None:
    est = mean_interval([10.0, 12.0, 14.0])
    assert est.value == 12.0
    assert est.low < 12.0 < est.high
    assert mean_interval([]).sample_size == 0


def test_samples_are_uniform_distinct_and_reproducible() -> None:
    a = sample_without_replacement(1000, 50, random.Random(3))
    b = sample_without_replacement(1000, 50, random.Random(3))
    assert a == b and len(set(a)) == 50 and a == sorted(a)
    assert sample_without_replacement(10, 50, random.Random(3)) == list(range(10))
    assert reservoir_sample(["x", "y"], 5, random.Random(1)) == ["x", "y"]
