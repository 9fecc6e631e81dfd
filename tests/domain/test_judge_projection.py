"""The offline judge without the time gap: the gap only gates, and the slot read-out of the
embeddings is fitted with the trees (decisions 260, 261)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import pytest

from nika_tui.domain.judge_example import Example
from nika_tui.domain.judge_features import (
    FEATURE_NAMES,
    SLOT_FEATURES,
    PairSimilarity,
    pair_features,
    with_slot,
)
from nika_tui.domain.judge_fit import fit_projection, train_model, with_projection
from nika_tui.domain.judge_model import JudgeModel, ModelFormatError, decide_pair
from nika_tui.domain.judge_projection import SlotProjection, pair_vector
from nika_tui.domain.verdicts import Fact, Verdict

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
NO_SIM = PairSimilarity(None, None)


def _model(r: float) -> JudgeModel:
    """A model whose probabilities are fixed by its bias alone (P(REPLACE) high for r=9)."""
    n = len(FEATURE_NAMES)
    zeros = tuple(0.0 for _ in range(n))
    return JudgeModel(FEATURE_NAMES, zeros, (1.0,) * n, (zeros,) * 3, (r, 0.0, 0.0), 0.5, 0.5)


@pytest.mark.parametrize(
    "gap",
    [timedelta(minutes=5), timedelta(hours=3), timedelta(days=4), timedelta(days=400)],
    ids=["minutes", "hours", "days", "a-year"],
)
def test_the_time_gap_is_not_a_feature(gap: timedelta) -> None:
    """An update stated minutes after the old fact reads exactly as one stated a year after:
    authors who wrote updates months apart must not teach "long gap → update"."""
    old = Fact("The VPN listens on UDP 51820.", T0)
    a_day = pair_features(old, Fact("VPN port: 443/udp", T0 + timedelta(days=1)), NO_SIM)
    other = pair_features(old, Fact("VPN port: 443/udp", T0 + gap), NO_SIM)
    assert other.values == a_day.values
    assert not other.same_time and not other.backdated


class MinuteCase(NamedTuple):
    test_id: str
    new: str
    after: timedelta
    verdict: Verdict


@pytest.mark.parametrize(
    "case",
    [
        MinuteCase(
            "correction-same-minute",
            "Correction: the guest wifi password rotates every 90 days, not 30.",
            timedelta(seconds=30),
            Verdict.REPLACE,
        ),
        MinuteCase(
            "fr-finalement-same-minute",
            "Finalement le mot de passe wifi invités change tous les 90 jours.",
            timedelta(seconds=20),
            Verdict.REPLACE,
        ),
        MinuteCase(
            "contradiction-same-minute",
            "The guest wifi password rotates every 90 days.",
            timedelta(seconds=30),
            Verdict.UNCERTAIN,
        ),
        MinuteCase(
            "quick-fix-minutes-later",
            "The guest wifi password rotates every 90 days.",
            timedelta(minutes=4),
            Verdict.REPLACE,
        ),
        MinuteCase(
            "hedged-correction-same-minute",
            "Correction: maybe the guest wifi password rotates every 90 days?",
            timedelta(seconds=30),
            Verdict.UNCERTAIN,
        ),
    ],
    ids=lambda c: c.test_id,
)
def test_same_minute_needs_a_correction_to_be_ordered(case: MinuteCase) -> None:
    """Same-minute contradictions have no order (UNCERTAIN) unless the new fact says it
    corrects the old one; a fix a few minutes later is an ordinary update."""
    old = Fact("The guest wifi password rotates every 30 days.", T0)
    features = pair_features(old, Fact(case.new, T0 + case.after), NO_SIM)
    assert decide_pair(_model(r=9.0), features).verdict is case.verdict


def test_a_same_minute_correction_teaches_the_model() -> None:
    """Only the uncorrected same-minute pair is gated out of the fit."""
    old = Fact("Refunds up to €100 without a manager.", T0)
    fix = Fact("Correction: refunds up to €150 without a manager.", T0 + timedelta(seconds=30))
    clash = Fact("Refunds up to €150 without a manager.", T0 + timedelta(seconds=30))
    assert not pair_features(old, fix, NO_SIM).gated
    assert pair_features(old, clash, NO_SIM).gated


def test_pair_vector_is_ordered() -> None:
    u, v, w, x = (0.6, 0.8), (0.8, 0.6), (1.0, 0.0), (0.0, 1.0)
    s, t = (0.5, 0.5), (0.1, 0.9)
    first = pair_vector(u, v, w, x, s, t)
    swapped = pair_vector(v, u, x, w, t, s)
    assert first[:12] == swapped[:12]  # the pair read-outs do not depend on the order
    assert first[12:] == (*w, *x, *u, *v, *s, *t)  # then each side as it is
    assert swapped[12:] == (*x, *w, *v, *u, *t, *s)
    assert first[:2] == pytest.approx((0.2, 0.2))  # |u − v| of the masked sentences
    assert first[2:4] == pytest.approx((0.48, 0.48))  # u ∘ v
    assert first[4:8] == pytest.approx((1.0, 1.0, 0.0, 0.0))  # then the full sentences
    assert first[8:10] == pytest.approx((0.6, 1.4))  # the unshared words: s + t
    assert first[10:12] == pytest.approx((0.4, 0.4))  # and |s − t|


def test_pair_vector_reads_missing_unshared_words_as_zero() -> None:
    u, v = (0.6, 0.8), (0.8, 0.6)
    only_new = pair_vector(u, v, u, v, None, (0.1, 0.9))
    assert only_new[8:12] == pytest.approx((0.1, 0.9, 0.1, 0.9))
    assert only_new[-4:] == (0.0, 0.0, 0.1, 0.9)
    assert pair_vector(u, v, u, v)[8:12] == (0.0, 0.0, 0.0, 0.0)


def test_projection_reads_and_refuses_another_shape() -> None:
    proj = SlotProjection(((1.0, 0.0), (0.0, 1.0), (0.0, 0.0), (1.0, 1.0)), (0.0, 0.5, -1.0, 0.0))
    assert proj.logits((2.0, 3.0)) == (2.0, 3.5, -1.0, 5.0)
    with pytest.raises(ValueError, match="expected 2"):
        proj.logits((1.0, 2.0, 3.0))
    assert SlotProjection.from_dict(proj.to_dict()) == proj
    with pytest.raises(ValueError):
        SlotProjection.from_dict({"weights": [[1.0]], "bias": [0.0]})


def _vector_examples() -> list[Example]:
    """Pairs whose vectors carry the label in one coordinate (and features that do not)."""
    out = []
    for i in range(36):
        label = (Verdict.REPLACE, Verdict.KEEP, Verdict.UNCERTAIN)[i % 3]
        f = pair_features(
            # Reworded, so no gate (decision 265's value-only rule) decides before the model.
            Fact("The cache TTL is 60 s.", T0),
            Fact("Cached entries expire after 30 s.", T0 + timedelta(days=3)),
            NO_SIM,
        )
        vector = tuple(float(k == i % 3) * 3.0 + 0.01 * (i % 5) for k in range(4))
        out.append(Example(f"v{i}", f, label, "", vector))
    return out


def test_the_slot_read_out_is_fitted_stored_and_applied() -> None:
    """The projection learns what the vectors say, the trees read it through the slot
    features, and it survives the model file."""
    examples = _vector_examples()
    model = train_model(examples, folds=3, max_wrong_replace=0.0)
    assert model.projection is not None and model.projection.width == 4
    assert JudgeModel.from_dict(model.to_dict()).projection == SlotProjection.from_dict(
        model.projection.to_dict()
    )
    applied = with_projection(examples, model.projection)
    replace_row, keep_row = applied[0].features.values, applied[1].features.values
    assert replace_row[SLOT_FEATURES][0] > replace_row[SLOT_FEATURES][1]
    assert keep_row[SLOT_FEATURES][1] > keep_row[SLOT_FEATURES][0]
    hits = sum(decide_pair(model, e.features).verdict is e.label for e in applied)
    assert hits >= 30  # the texts are identical: only the read-out tells them apart


def test_constructed_unrelated_pairs_are_a_class_of_their_own_in_the_read_out() -> None:
    """Not one more KEEP: the fourth logit says "about something else"."""
    examples = _vector_examples()
    unrelated = [
        replace(e, id=f"{e.id}~u", label=Verdict.KEEP, counted=False, vector=(0.0, 0.0, 0.0, 3.0))
        for e in examples[:12]
    ]
    projection = fit_projection(examples + unrelated)
    logits = projection.logits((0.0, 0.0, 0.0, 3.0))
    assert max(range(4), key=logits.__getitem__) == 3
    keep = projection.logits(examples[1].vector)
    assert max(range(4), key=keep.__getitem__) == 1
    without = fit_projection(examples)
    assert without.logits((0.0, 0.0, 0.0, 3.0))[3] == 0.0  # no such pairs: a constant


def test_with_slot_replaces_only_the_slot_features() -> None:
    f = pair_features(Fact("a is 1", T0), Fact("a is 2", T0 + timedelta(days=1)), NO_SIM)
    g = with_slot(f, (1.0, 2.0, 3.0, 4.0))
    assert g.values[SLOT_FEATURES] == (1.0, 2.0, 3.0, 4.0)
    assert g.values[: SLOT_FEATURES.start] == f.values[: SLOT_FEATURES.start]


def test_a_model_file_with_a_broken_projection_is_refused() -> None:
    data = _model(0.0).to_dict()
    data["projection"] = {"weights": [[1.0], [1.0]], "bias": [0.0, 0.0]}
    with pytest.raises(ModelFormatError, match="slot projection"):
        JudgeModel.from_dict(data)
