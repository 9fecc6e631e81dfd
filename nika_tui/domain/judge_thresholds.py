"""The offline judge's thresholds, chosen on out-of-fold probabilities. Pure.

The REPLACE threshold is the lowest one at which cross-validated wrong REPLACEs (REPLACE said,
label not REPLACE) stay at or under a target; the KEEP threshold then maximises
cross-validated accuracy; the same-minute KEEP threshold (decision 593) and the correction
REPLACE threshold (decision 594) are chosen after them, each on its own pairs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nika_tui.domain.judge_example import Example
from nika_tui.domain.judge_model import JudgeModel, rule_verdict
from nika_tui.domain.verdicts import Verdict


def scores_at(
    oof: Sequence[tuple[JudgeModel, Example]],
    probs: Sequence[Mapping[Verdict, float]],
    t_r: float,
    t_k: float,
    t_same: float | None = None,
    t_corr: float | None = None,
) -> tuple[int, int]:
    """(correct, wrong REPLACE) at thresholds ``(t_r, t_k, t_same, t_corr)`` of out-of-fold
    probabilities."""
    correct = wrong = 0
    for (_, e), p in zip(oof, probs, strict=True):
        verdict = rule_verdict(
            e.features, p[Verdict.REPLACE], p[Verdict.KEEP], t_r, t_k, 0.0, t_same, t_corr
        )[0]
        correct += verdict is e.label
        wrong += verdict is Verdict.REPLACE and e.label is not Verdict.REPLACE
    return correct, wrong


def choose_thresholds(
    oof: Sequence[tuple[JudgeModel, Example]], max_wrong_replace: float
) -> tuple[float, float]:
    """The REPLACE / KEEP thresholds from out-of-fold models (see the module docstring)."""
    n = len(oof)
    probs = [model.probabilities(e.features.values) for model, e in oof]
    grid = [round(0.30 + 0.02 * i, 2) for i in range(35)]  # 0.30 … 0.98
    best: tuple[int, float, float] | None = None
    for t_r in grid:
        for t_k in grid:
            correct, wrong = scores_at(oof, probs, t_r, t_k)
            if wrong > max_wrong_replace * n:
                continue
            # Ties go to the higher REPLACE threshold: the cautious side.
            if best is None or correct > best[0] or (correct == best[0] and t_r > best[1]):
                best = (correct, t_r, t_k)
    if best is None:
        return 0.99, 0.5
    return best[1], best[2]


SAME_TIME_GRID: tuple[float, ...] = (*(round(0.30 + 0.02 * i, 2) for i in range(35)), 1.01)
"""Same-minute KEEP thresholds tried; 1.01 never keeps a same-minute pair."""


def choose_same_time_threshold(
    oof: Sequence[tuple[JudgeModel, Example]], t_r: float, t_k: float
) -> float:
    """The same-minute KEEP threshold that judges the out-of-fold same-minute pairs best at
    ``(t_r, t_k)``; ties go to the higher one (UNCERTAIN, the cautious side). The other
    thresholds are chosen first: the same-minute rule reads only its own pairs (decision
    593)."""
    same = [(m, e) for m, e in oof if e.features.same_time and not e.features.backdated]
    if not same:
        return t_k
    probs = [m.probabilities(e.features.values) for m, e in same]
    best = max(SAME_TIME_GRID, key=lambda t: (scores_at(same, probs, t_r, t_k, t)[0], t))
    return best


def choose_correction_threshold(
    oof: Sequence[tuple[JudgeModel, Example]],
    unrelated_oof: Sequence[tuple[JudgeModel, Example]],
    thresholds: tuple[float, float, float],
) -> float:
    """The REPLACE threshold for a stated correction (decision 594): the one that judges the
    out-of-fold correction pairs best without one more wrong REPLACE than the general
    threshold makes on them, counting the uncounted pairs too (a correction of something
    else must not retire this fact); ties go to the higher."""
    t_r, t_k, t_same = thresholds
    pairs = [(m, e) for m, e in (*oof, *unrelated_oof) if e.features.correction]
    if not pairs:
        return t_r
    probs = [m.probabilities(e.features.values) for m, e in pairs]
    counted = [(i, e.counted) for i, (_, e) in enumerate(pairs)]

    def score(t: float) -> tuple[int, int]:
        correct = wrong = 0
        for i, is_counted in counted:
            e, p = pairs[i][1], probs[i]
            verdict = rule_verdict(
                e.features, p[Verdict.REPLACE], p[Verdict.KEEP], t_r, t_k, 0.0, t_same, t
            )[0]
            correct += is_counted and verdict is e.label
            wrong += verdict is Verdict.REPLACE and (
                e.label is not Verdict.REPLACE or not is_counted
            )
        return correct, wrong

    budget = score(t_r)[1]
    best = t_r
    best_correct = score(t_r)[0]
    for t in sorted((t for t in SAME_TIME_GRID if t < t_r), reverse=True):
        correct, wrong = score(t)
        if wrong <= budget and correct > best_correct:
            best, best_correct = t, correct
    return best
