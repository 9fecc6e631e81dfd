"""The tuning's judge: per-query scores, the bootstrap noise, and the 2× noise adoption rule."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from nika_tui.domain.recall_params import Judged, bootstrap_sd, decide, query_score


class Score(NamedTuple):
    test_id: str
    label: Judged
    returned: list[str]
    score: float


SCORES = [
    Score("recall-at-k-all", Judged("q", useful=frozenset({"a", "b"})), ["a", "x", "b"], 1.0),
    Score("recall-at-k-half", Judged("q", useful=frozenset({"a", "b"})), ["a", "x"], 0.5),
    Score(
        "recall-at-k-beyond-k-misses",
        Judged("q", useful=frozenset({"a"})),
        ["x1", "x2", "x3", "x4", "x5", "a"],
        0.0,
    ),
    Score("abstains-right", Judged("q", expect_none=True), [], 1.0),
    Score("abstains-wrong", Judged("q", expect_none=True), ["x"], 0.0),
    Score(
        "avoids-not-useful",
        Judged("q", not_useful=frozenset({"bad1", "bad2"})),
        ["bad1", "ok"],
        0.5,
    ),
    Score("unlabelled-is-neutral", Judged("q"), ["x"], 1.0),
]


@pytest.mark.parametrize("case", SCORES, ids=[c.test_id for c in SCORES])
def test_query_score(case: Score) -> None:
    assert query_score(case.label, case.returned) == case.score


def test_bootstrap_noise() -> None:
    assert bootstrap_sd([0.5], seed=1) == float("inf")  # one query says nothing about noise
    assert bootstrap_sd([0.2] * 30, seed=1) == pytest.approx(0.0, abs=1e-12)  # no spread
    spread = [0.0, 1.0] * 15
    assert bootstrap_sd(spread, seed=1) == bootstrap_sd(spread, seed=1)  # seeded
    # The standard error of a mean of 30 values of sd 0.5 is about 0.09.
    assert 0.06 < bootstrap_sd(spread, seed=1) < 0.12


class Adoption(NamedTuple):
    test_id: str
    baseline: list[float]
    best: list[float]
    adopt: bool


ADOPTIONS = [
    Adoption("clear-gain-adopted", [0.0] * 20, [1.0] * 18 + [0.0] * 2, True),
    Adoption("no-gain-kept", [0.5] * 20, [0.5] * 20, False),
    Adoption("a-loss-never-adopted", [1.0] * 20, [0.0] * 20, False),
    # One query better, one worse, the rest equal: a gain of 0 ± noise.
    Adoption("noise-only-kept", [0.0, 1.0] + [0.5] * 18, [1.0, 0.0] + [0.5] * 18, False),
    # A small mean gain carried by 2 queries of 20: within 2× the noise, so not adopted.
    Adoption("gain-within-2-sd-kept", [0.0] * 20, [1.0] * 2 + [0.0] * 18, False),
]


@pytest.mark.parametrize("case", ADOPTIONS, ids=[c.test_id for c in ADOPTIONS])
def test_decide_adopts_only_past_twice_the_noise(case: Adoption) -> None:
    d = decide(case.baseline, case.best, seed=7)
    assert d.adopt is case.adopt
    assert d.gain == pytest.approx(sum(case.best) / 20 - sum(case.baseline) / 20)
    assert d.adopt == (d.gain > 0 and d.gain > 2 * d.noise_sd)


def test_decide_on_no_queries_adopts_nothing() -> None:
    d = decide([], [], seed=7)
    assert (d.gain, d.adopt) == (0.0, False)
