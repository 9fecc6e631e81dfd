"""Estimators with confidence intervals, for the debt audit (pure: the RNG is an argument).

At the seed's vault size (413,000 points) an exact all-pairs duplicate count is quadratic. The
audit instead draws a uniform random sample of points, asks the vector index for each point's
nearest other neighbour, and reports the observed proportion with a Wilson score interval
(:func:`wilson_interval`), corrected for sampling without replacement from a finite population.

Every interval here is two-sided at 95 % by default (``z = 1.96``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

Z_95 = 1.959963984540054
"""Two-sided 95 % normal quantile."""


@dataclass(frozen=True, slots=True)
class Estimate:
    """A point estimate with its interval and the sample it came from.

    Attributes:
        value: The estimate (a proportion in [0, 1], a mean, a percentile…).
        low: Lower bound of the interval.
        high: Upper bound of the interval.
        sample_size: Number of observations used.
        population: Size of the population sampled from (None when unknown or a stream).
    """

    value: float
    low: float
    high: float
    sample_size: int
    population: int | None = None

    @property
    def exact(self) -> bool:
        """True when the sample is the whole population (the interval is a point)."""
        return self.population is not None and self.sample_size >= self.population


def finite_population_factor(n: int, population: int | None) -> float:
    """sqrt((N - n) / (N - 1)): shrinks an interval when a sample is a large part of N.

    Args:
        n: Sample size.
        population: Population size, or None for an infinite population.

    Returns:
        A factor in [0, 1]; 1.0 when the population is unknown or tiny.
    """
    if population is None or population <= 1:
        return 1.0
    if n >= population:
        return 0.0
    return math.sqrt((population - n) / (population - 1))


def wilson_interval(
    successes: int, n: int, z: float = Z_95, population: int | None = None
) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    Unlike the normal ("Wald") interval it stays inside [0, 1] and behaves at p near 0 or 1,
    which is where debt rates live (a healthy tenant has ~0 % duplicates). With a finite
    ``population`` the z value is scaled by the finite-population factor, so a census yields
    a zero-width interval.

    Args:
        successes: Number of sampled items with the property.
        n: Sample size.
        z: Normal quantile (1.96 for 95 %).
        population: Population size when sampling without replacement.

    Returns:
        ``(low, high)``; ``(0.0, 1.0)`` when ``n`` is 0.

    Raises:
        ValueError: If counts are negative or ``successes > n``.
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"invalid counts: {successes} of {n}")
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    zf = z * finite_population_factor(n, population)
    if zf == 0.0:
        return (p, p)
    z2 = zf * zf
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = zf * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    # At k = 0 (or k = n) the bound is exactly 0 (or 1); rounding must not move it.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return (low, high)


def estimate_proportion(
    successes: int, n: int, population: int | None = None, z: float = Z_95
) -> Estimate:
    """Proportion ``successes / n`` with its Wilson interval.

    Args:
        successes: Items with the property.
        n: Sample size (0 gives value 0 and the uninformative interval [0, 1]).
        population: Population size (finite-population correction), if known.
        z: Normal quantile.

    Returns:
        The estimate.
    """
    low, high = wilson_interval(successes, n, z=z, population=population)
    value = successes / n if n else 0.0
    return Estimate(value=value, low=low, high=high, sample_size=n, population=population)


def sample_size_for_proportion(
    margin: float, p: float = 0.5, z: float = Z_95, population: int | None = None
) -> int:
    """Sample size so that a proportion's 95 % half-width is at most ``margin``.

    ``n0 = z² p (1 - p) / margin²``, then the finite-population correction
    ``n = n0 / (1 + (n0 - 1) / N)``. With ``p = 0.5`` (the worst case) and ``margin = 0.02``
    this is 2,401 for an infinite population.

    Args:
        margin: Wanted half-width (e.g. 0.02 for ±2 points).
        p: Expected proportion (0.5 when unknown: the largest n).
        z: Normal quantile.
        population: Population size, if finite.

    Returns:
        The sample size, at least 1 and at most ``population``.

    Raises:
        ValueError: If ``margin`` is not in (0, 1) or ``p`` not in [0, 1].
    """
    if not 0.0 < margin < 1.0:
        raise ValueError("margin must be in (0, 1)")
    if not 0.0 <= p <= 1.0:
        raise ValueError("p must be in [0, 1]")
    n0 = z * z * p * (1 - p) / (margin * margin)
    n = n0 if population is None else n0 / (1 + (n0 - 1) / population)
    size = max(1, math.ceil(n))
    return min(size, population) if population is not None else size


def mean_interval(values: Sequence[float], z: float = Z_95) -> Estimate:
    """Sample mean with a normal-approximation interval (``mean ± z·s/√n``).

    Args:
        values: Observations.
        z: Normal quantile.

    Returns:
        The estimate; value 0 with an empty interval for no data, a point for one value.
    """
    n = len(values)
    if n == 0:
        return Estimate(0.0, 0.0, 0.0, 0)
    mean = math.fsum(values) / n
    if n == 1:
        return Estimate(mean, mean, mean, 1)
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    half = z * math.sqrt(var / n)
    return Estimate(mean, mean - half, mean + half, n)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (the smallest value with at least ``q`` % of values ≤ it).

    Nearest rank returns an observed value (a real latency someone waited), never an
    interpolation between two.

    Args:
        values: Observations (any order).
        q: Percentile in (0, 100].

    Returns:
        The percentile.

    Raises:
        ValueError: If ``values`` is empty or ``q`` out of range.
    """
    if not values:
        raise ValueError("percentile of no values")
    if not 0.0 < q <= 100.0:
        raise ValueError("q must be in (0, 100]")
    ordered = sorted(values)
    rank = math.ceil(q / 100.0 * len(ordered))
    return ordered[max(0, rank - 1)]


def percentile_rank_interval(n: int, q: float, z: float = Z_95) -> tuple[int, int]:
    """Distribution-free interval for a percentile, as 1-based ranks into the sorted sample.

    The count of observations below the true q-th percentile is Binomial(n, q/100); its
    normal approximation gives the ranks ``n·p ± z·√(n·p·(1-p))`` (clamped to 1..n).

    Args:
        n: Sample size (≥ 1).
        q: Percentile in (0, 100].
        z: Normal quantile.

    Returns:
        ``(low_rank, high_rank)``, 1-based.
    """
    p = q / 100.0
    half = z * math.sqrt(n * p * (1 - p))
    low = max(1, math.floor(n * p - half))
    high = min(n, math.ceil(n * p + half) + 1)
    return (low, high)


def percentile_estimate(values: Sequence[float], q: float, z: float = Z_95) -> Estimate:
    """Nearest-rank percentile with its order-statistic interval.

    Args:
        values: Observations.
        q: Percentile in (0, 100].
        z: Normal quantile.

    Returns:
        The estimate.
    """
    ordered = sorted(values)
    value = percentile(ordered, q)
    lo_rank, hi_rank = percentile_rank_interval(len(ordered), q, z)
    return Estimate(value, ordered[lo_rank - 1], ordered[hi_rank - 1], len(ordered))


def sample_without_replacement(population: int, k: int, rng: random.Random) -> list[int]:
    """``min(k, population)`` distinct indices in ``range(population)``, uniformly.

    Args:
        population: Number of items.
        k: Wanted sample size.
        rng: The random source (seeded by the caller for reproducible audits).

    Returns:
        Sorted indices (sorted so a scroll can pick them in one pass).
    """
    if population <= 0 or k <= 0:
        return []
    if k >= population:
        return list(range(population))
    return sorted(rng.sample(range(population), k))


def reservoir_sample(items: Sequence[T], k: int, rng: random.Random) -> list[T]:
    """Uniform sample of ``k`` items from a sequence (all of them when shorter).

    Args:
        items: The population.
        k: Wanted sample size.
        rng: The random source.

    Returns:
        The sampled items, in population order.
    """
    idx = sample_without_replacement(len(items), k, rng)
    return [items[i] for i in idx]
