"""Fit the learned judge: gradient-boosted trees (or logistic regression), cross-validated
thresholds. No I/O; scikit-learn is imported only to fit trees, never to judge.

Deterministic: trees with a fixed seed, logistic regression by full-batch gradient descent
from zero weights, folds assigned by a stable hash of the pair id, so the same training file
always gives the same model.

Thresholds are chosen on *out-of-fold* probabilities of the training split: the REPLACE
threshold is the lowest one at which cross-validated wrong REPLACEs (REPLACE said, label not
REPLACE) stay at or under ``max_wrong_replace``; the KEEP threshold then maximises
cross-validated accuracy. Nothing of a dev or test split is read here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from nika_tui.domain.judge_example import Example
from nika_tui.domain.judge_features import FEATURE_NAMES, with_slot
from nika_tui.domain.judge_model import CLASSES, JudgeModel, Tree
from nika_tui.domain.judge_projection import SlotProjection
from nika_tui.domain.judge_thresholds import (
    choose_correction_threshold,
    choose_same_time_threshold,
    choose_thresholds,
    scores_at,
)

DEFAULT_KIND = "gbt"
"""Boosted trees ship (decision 181): fitted on three authors they beat the regression by
leave-one-author-out (docs/judges.md); on one author they calibrated far too strictly
(decision 61), which is why the regression shipped before."""
TREE_DEPTH = 3
TREE_STAGES = 200
"""Doubled in the tenth round (13,000 examples with the unrelated pairs): cross-validated
accuracy 84.3 % → 86.2 % at the same wrong-REPLACE target (decision 595)."""
TREE_LEARNING_RATE = 0.1
DEFAULT_L2 = 1.0
DEFAULT_FOLDS = 5
DEFAULT_MAX_WRONG_REPLACE = 0.0125
"""Cross-validated wrong-REPLACE target: chosen by leave-one-author-out (eleven authors: 1.0 %
held-out wrong REPLACE at 1.25 %, 1.26 % at 1.5 %, decision 537; thirteen: 1.19 % and 1.35 %,
decision 567)."""
STEPS = 3000
LEARNING_RATE = 0.2

Matrix = NDArray[np.float64]


def _fit_lr(x: Matrix, y: NDArray[np.int64], l2: float) -> tuple[Matrix, Matrix]:
    """Multinomial logistic regression on standardised ``x``: (weights, bias)."""
    n, d = x.shape
    k = len(CLASSES)
    w = np.zeros((k, d))
    b = np.zeros(k)
    onehot = np.eye(k)[y]
    for _ in range(STEPS):
        logits = x @ w.T + b
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        err = p - onehot
        w -= LEARNING_RATE * (err.T @ x / n + l2 * w / n)
        b -= LEARNING_RATE * err.mean(axis=0)
    return w, b


def fit_probabilities(
    train: Sequence[Example], l2: float = DEFAULT_L2
) -> tuple[Matrix, Matrix, Matrix, Matrix]:
    """Standardise and fit: (mean, scale, weights, bias)."""
    x = np.array([e.features.values for e in train], dtype=np.float64)
    y = np.array([CLASSES.index(e.label) for e in train], dtype=np.int64)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    w, b = _fit_lr((x - mean) / scale, y, l2)
    return mean, scale, w, b


def fit_trees(train: Sequence[Example]) -> tuple[tuple[tuple[Tree, ...], ...], tuple[float, ...]]:
    """Gradient-boosted trees (scikit-learn, imported only to fit): (stages, initial logits).

    Depth 3, 100 stages, learning rate 0.1, 80 % row subsampling with a fixed seed: the same
    training data gives the same trees.
    """
    from sklearn.ensemble import GradientBoostingClassifier

    x = np.array([e.features.values for e in train], dtype=np.float64)
    y = np.array([CLASSES.index(e.label) for e in train], dtype=np.int64)
    gbt = GradientBoostingClassifier(
        max_depth=TREE_DEPTH,
        n_estimators=TREE_STAGES,
        learning_rate=TREE_LEARNING_RATE,
        subsample=0.8,
        random_state=0,
    ).fit(x, y, sample_weight=_weights(train))
    if list(gbt.classes_) != list(range(len(CLASSES))):
        raise ValueError("the training data must hold every verdict")
    init = gbt._raw_predict_init(x[:1])[0]
    stages = tuple(
        tuple(
            Tree(
                tuple(int(f) for f in est.tree_.feature),
                tuple(float(t) for t in est.tree_.threshold),
                tuple(int(v) for v in est.tree_.children_left),
                tuple(int(v) for v in est.tree_.children_right),
                tuple(float(v) for v in est.tree_.value[:, 0, 0]),
            )
            for est in stage
        )
        for stage in gbt.estimators_
    )
    return stages, tuple(float(v) for v in init)


UNRELATED_WEIGHT = 1.0
"""The uncounted (unrelated) pairs together weigh at most this fraction of the counted ones in
a fit (each at most 1). At 0.25 cross-validation gave 83.1 % instead of 81.1 %, but the judge
still retired "Deploys … on Fridays" for "The staging server … moved to … on Monday"
(P(replace) 85 %, the session-digest test); at 1.0 it does not (decision 590)."""


def _weights(train: Sequence[Example]) -> NDArray[np.float64]:
    """Each example's weight in a fit: 1 for a counted pair; the uncounted ones share
    :data:`UNRELATED_WEIGHT` of the counted total (at most 1 each)."""
    counted = sum(e.counted for e in train)
    uncounted = len(train) - counted
    each = min(1.0, UNRELATED_WEIGHT * counted / uncounted) if uncounted else 1.0
    return np.array([1.0 if e.counted else each for e in train], dtype=np.float64)


PROJECTION_C = 1.0
"""Inverse L2 strength of the slot read-out: chosen by leave-one-author-out among 0.1 / 1 /
10 (decision 261)."""


def fit_projection(train: Sequence[Example]) -> SlotProjection:
    """The slot read-out: a multinomial logistic regression from pair vectors to verdicts
    (scikit-learn's L-BFGS, deterministic; imported only to fit)."""
    from sklearn.linear_model import LogisticRegression

    x = np.array([e.vector for e in train], dtype=np.float64)
    # A constructed unrelated pair is its own class, not one more KEEP: "about something
    # else" and "compatible facts about one thing" read differently (decision 590).
    unrelated = len(CLASSES)
    y = np.array([CLASSES.index(e.label) if e.counted else unrelated for e in train])
    lr = LogisticRegression(C=PROJECTION_C, max_iter=3000).fit(
        x, y.astype(np.int64), sample_weight=_weights(train)
    )
    classes = [int(c) for c in lr.classes_]
    if classes[: len(CLASSES)] != list(range(len(CLASSES))):
        raise ValueError("the training data must hold every verdict")
    weights = [tuple(float(w) for w in row) for row in lr.coef_]
    bias = [float(b) for b in lr.intercept_]
    if unrelated not in classes:
        # No constructed pairs: the fourth logit is a constant the trees cannot split on.
        weights.append((0.0,) * x.shape[1])
        bias.append(0.0)
    return SlotProjection(tuple(weights), tuple(bias))


def with_projection(examples: Sequence[Example], projection: SlotProjection) -> list[Example]:
    """``examples`` with their slot features read by ``projection`` (pairs without a vector
    keep zeros)."""
    return [
        replace(e, features=with_slot(e.features, projection.logits(e.vector))) if e.vector else e
        for e in examples
    ]


def _slots_out_of_fold(examples: Sequence[Example], folds: int, skip_gated: bool) -> list[Example]:
    """Each example's slot features from a read-out fitted without its fold: the trees learn
    how far to trust the read-out on pairs it has not seen, as at judging time."""
    out: dict[str, Example] = {}
    for k in range(folds):
        inner = [e for e in examples if e.vector and learns_outside(e.id, k, folds)]
        projection = fit_projection(_fit_set(inner, skip_gated))
        outer = [e for e in examples if fold_of(e.id, folds) == k]
        out.update((e.id, e) for e in with_projection(outer, projection))
    return [out.get(e.id, e) for e in examples]


def build_model(
    train: Sequence[Example],
    l2: float = DEFAULT_L2,
    replace_threshold: float = 0.5,
    keep_threshold: float = 0.5,
    meta: dict[str, object] | None = None,
    kind: str = DEFAULT_KIND,
    projection: SlotProjection | None = None,
) -> JudgeModel:
    """Fit on ``train`` (``kind``: ``gbt`` trees or ``lr`` logistic regression) and wrap with
    the given thresholds and slot read-out."""
    if kind == "gbt":
        stages, init = fit_trees(train)
        n = len(FEATURE_NAMES)
        return JudgeModel(
            feature_names=FEATURE_NAMES,
            mean=(0.0,) * n,
            scale=(1.0,) * n,
            weights=((0.0,) * n,) * len(CLASSES),
            bias=init,
            replace_threshold=replace_threshold,
            keep_threshold=keep_threshold,
            meta={**(meta or {}), "kind": "gbt"},
            trees=stages,
            learning_rate=TREE_LEARNING_RATE,
            projection=projection,
        )
    mean, scale, w, b = fit_probabilities(train, l2)
    return JudgeModel(
        feature_names=FEATURE_NAMES,
        mean=tuple(float(v) for v in mean),
        scale=tuple(float(v) for v in scale),
        weights=tuple(tuple(float(v) for v in row) for row in w),
        bias=tuple(float(v) for v in b),
        replace_threshold=replace_threshold,
        keep_threshold=keep_threshold,
        meta=meta or {},
        projection=projection,
    )


def fold_of(pair_id: str, folds: int) -> int:
    """A stable fold number for a pair id (no randomness, no order dependence). A constructed
    pair ``"i~j"`` goes with ``i``, whose old fact it holds, so no fold judges a text its
    model learnt beside another label."""
    return int(hashlib.sha256(pair_id.split("~")[0].encode()).hexdigest()[:8], 16) % folds


def learns_outside(pair_id: str, fold: int, folds: int) -> bool:
    """May a model judging ``fold`` learn from this pair? A constructed pair ``"i~j"`` holds
    the new text of ``j``, labelled "about something else": learning it while judging ``j``
    pulls ``j``'s own label towards KEEP, a fault of the cross-validation only (a new author's
    texts are never in a constructed pair), so it is left out of both ``i``'s and ``j``'s
    folds."""
    return all(fold_of(part, folds) != fold for part in pair_id.split("~"))


def train_model(
    examples: Sequence[Example],
    l2: float = DEFAULT_L2,
    folds: int = DEFAULT_FOLDS,
    max_wrong_replace: float = DEFAULT_MAX_WRONG_REPLACE,
    meta: dict[str, object] | None = None,
    kind: str = DEFAULT_KIND,
    by_domain: bool = False,
    skip_gated: bool = True,
) -> JudgeModel:
    """Cross-validate thresholds on ``examples``, then fit on all of them.

    Args:
        examples: The training split, as features.
        l2: L2 regularisation strength.
        folds: Cross-validation folds (by stable hash of the id).
        max_wrong_replace: Target cross-validated wrong-REPLACE rate.
        meta: Extra facts stored in the model file (data files, counts).
        kind: ``lr`` (default) or ``gbt``.
        by_domain: Hold out one domain per fold (pairs without a domain always train)
            instead of folds by id.
        skip_gated: Fit the model on the pairs no gate decides (backdated, another entity,
            same time); the thresholds are still chosen on every pair.

    Returns:
        The fitted model with its thresholds; ``meta`` also records the cross-validated
        accuracy and wrong-REPLACE rate at those thresholds.
    """
    projection = None
    if any(e.vector for e in examples):
        projection = fit_projection(_fit_set([e for e in examples if e.vector], skip_gated))
        examples = _slots_out_of_fold(examples, folds, skip_gated)
    oof: list[tuple[JudgeModel, Example]] = []
    unrelated_oof: list[tuple[JudgeModel, Example]] = []
    # Pairs without a domain (older in-repo sets) are always trained on, never held out: the
    # thresholds are calibrated on the domains of the independent corpus only.
    groups = sorted({e.group for e in examples if e.group})
    by_group = by_domain and len(groups) >= 3
    # Folds by domain hold the thresholds on a domain the model has not seen; with one
    # author's 210 pairs they come out so strict (0.98) that the review queue floods, so the
    # default stays random folds by id (decision 62).
    fold_count = len(groups) if by_group else folds

    def fold(e: Example) -> int:
        if not by_group:
            return fold_of(e.id, folds)
        return groups.index(e.group) if e.group else -1

    for k in range(fold_count):
        inner = [
            e for e in examples if fold(e) != k and (by_group or learns_outside(e.id, k, folds))
        ]
        outer = [e for e in examples if fold(e) == k]
        if not inner or not outer:
            continue
        model = build_model(_fit_set(inner, skip_gated), l2, kind=kind)
        oof.extend((model, e) for e in outer if e.counted)
        unrelated_oof.extend((model, e) for e in outer if not e.counted)
    t_r, t_k = choose_thresholds(oof, max_wrong_replace)
    t_same = choose_same_time_threshold(oof, t_r, t_k)
    t_corr = choose_correction_threshold(oof, unrelated_oof, (t_r, t_k, t_same))
    probs = [m.probabilities(e.features.values) for m, e in oof]
    correct, wrong = scores_at(oof, probs, t_r, t_k, t_same, t_corr)
    info: dict[str, object] = dict(meta or {})
    info.update(
        {
            "l2": l2,
            "folds": f"by domain ({fold_count})" if by_group else folds,
            "max_wrong_replace": max_wrong_replace,
            "n_train": sum(e.counted for e in examples),
            "n_unrelated": sum(not e.counted for e in examples),
            "cv_accuracy": round(correct / len(oof), 4) if oof else None,
            "cv_wrong_replace_rate": round(wrong / len(oof), 4) if oof else None,
        }
    )
    if unrelated_oof:
        probs = [m.probabilities(e.features.values) for m, e in unrelated_oof]
        said = scores_at(unrelated_oof, probs, t_r, t_k, t_same, t_corr)[1]
        # Out of fold, at the chosen thresholds: how often "about something else" retires.
        info["cv_unrelated_replace_rate"] = round(said / len(unrelated_oof), 4)
    model = build_model(
        _fit_set(examples, skip_gated), l2, t_r, t_k, info, kind=kind, projection=projection
    )
    return replace(model, same_time_keep_threshold=t_same, correction_threshold=t_corr)


def _fit_set(examples: Sequence[Example], skip_gated: bool) -> list[Example]:
    """The pairs the model learns from: a gated pair's label says what its gate decides
    (a backdated KEEP, a same-time UNCERTAIN), not whether the two sentences conflict."""
    return [e for e in examples if not (skip_gated and e.features.gated)]
