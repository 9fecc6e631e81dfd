"""The learned judge's model and decision. Pure: no I/O, no clock; parameters are data.

Gradient-boosted trees (or a multinomial logistic regression) over
:data:`~nika_tui.domain.judge_features.FEATURE_NAMES`, fitted by
:mod:`nika_tui.domain.judge_fit` and stored as JSON in ``nika_tui/assets/judge_model.json``
(retrained by ``nika judge train``). The decision around it, in order:

1. the new fact is backdated (valid time more than a minute before the old one's) → KEEP: a
   backdated fact never retires a newer one;
2. different environments or different work items → KEEP: another entity;
3. valid times within the same minute → REPLACE when the new fact says it corrects the old
   one and the model says REPLACE; KEEP when the model is sure both hold (``P(KEEP) ≥
   same_time_keep_threshold``, chosen on its own: nine in ten same-minute pairs of the
   corpus are contradictions, decision 593); else UNCERTAIN: no order to decide by;
4. the new fact does not claim a present value — a hedge, question, proposal, trial, or a
   conditional or undated plan → UNCERTAIN, whatever the model says (decision 262); nor
   when the old fact gives one value for two things together and the new one names at
   most one of them (an unresolvable subject, decision 536);
5. the new fact says it corrects or retracts the old one ("Correction:", "scratch that",
   "finalement") and ``P(REPLACE) ≥ correction_threshold`` → REPLACE: 454 of 458 such corpus
   pairs are REPLACE, but a correction of something else is not (decision 594);
6. ``P(REPLACE) ≥ replace_threshold`` → REPLACE, unless the new fact is a temporary change
   or a firm dated plan,
   an addition, or a retraction of some other change that keeps the old value → KEEP (the
   threshold is chosen by cross-validation so that wrong REPLACEs stay at or under a target);
7. ``P(KEEP) ≥ keep_threshold`` → KEEP; otherwise UNCERTAIN (the abstain band).

A verdict whose deciding probability lies within ``margin`` of its threshold, or that a gate
turned away from REPLACE, is *near the threshold*: the cascade sends it, with every
UNCERTAIN, to an LLM judge when privacy allows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nika_tui.domain.judge_features import FEATURE_NAMES, PairFeatures
from nika_tui.domain.judge_projection import SlotProjection
from nika_tui.domain.verdicts import Verdict

CLASSES: tuple[Verdict, ...] = (Verdict.REPLACE, Verdict.KEEP, Verdict.UNCERTAIN)
OFFLINE_JUDGE_NAME = "offline"


class ModelFormatError(ValueError):
    """The model file does not match this code (features or shape)."""


@dataclass(frozen=True, slots=True)
class Tree:
    """One regression tree, as arrays (a node is a leaf when ``left[i] < 0``)."""

    feature: tuple[int, ...]
    threshold: tuple[float, ...]
    left: tuple[int, ...]
    right: tuple[int, ...]
    value: tuple[float, ...]

    def predict(self, values: Sequence[float]) -> float:
        """The leaf value for ``values`` (goes left when ``x[feature] <= threshold``)."""
        node = 0
        while self.left[node] >= 0:
            go_left = values[self.feature[node]] <= self.threshold[node]
            node = self.left[node] if go_left else self.right[node]
        return self.value[node]

    def to_dict(self) -> dict[str, list[Any]]:
        """JSON form."""
        return {
            "feature": list(self.feature),
            "threshold": list(self.threshold),
            "left": list(self.left),
            "right": list(self.right),
            "value": list(self.value),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Tree:
        """Read the JSON form."""
        return cls(
            tuple(int(v) for v in data["feature"]),
            tuple(float(v) for v in data["threshold"]),
            tuple(int(v) for v in data["left"]),
            tuple(int(v) for v in data["right"]),
            tuple(float(v) for v in data["value"]),
        )


@dataclass(frozen=True, slots=True)
class JudgeModel:
    """Fitted parameters and decision thresholds."""

    feature_names: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[tuple[float, ...], ...]
    """One row per class of :data:`CLASSES`, one column per feature."""
    bias: tuple[float, ...]
    replace_threshold: float
    keep_threshold: float
    margin: float = 0.1
    meta: Mapping[str, Any] = field(default_factory=dict)
    """Training data, regularisation, cross-validated figures (for reading, not deciding)."""
    trees: tuple[tuple[Tree, ...], ...] = ()
    """Gradient-boosted trees, one tuple of three (one per class) per stage; when present the
    logits are ``bias + learning_rate × Σ tree(x)`` and ``weights`` are unused."""
    learning_rate: float = 0.1
    projection: SlotProjection | None = None
    """The slot read-out of the embeddings (the ``slot_*`` features); ``None``: those
    features are zero (a model fitted without an embedder)."""
    same_time_keep_threshold: float | None = None
    """``P(KEEP)`` at which two facts stated in the same minute are both kept; ``None``:
    :attr:`keep_threshold` (models fitted before decision 593)."""
    correction_threshold: float | None = None
    """``P(REPLACE)`` at which a stated correction retires the old fact; ``None``:
    :attr:`replace_threshold` (models fitted before decision 594)."""

    def probabilities(self, values: Sequence[float]) -> dict[Verdict, float]:
        """Class probabilities for one feature vector.

        Args:
            values: Features in :attr:`feature_names` order.

        Returns:
            Verdict → probability (summing to 1).
        """
        if self.trees:
            logits = list(self.bias)
            for stage in self.trees:
                for k, tree in enumerate(stage):
                    logits[k] += self.learning_rate * tree.predict(values)
        else:
            z = [(v - m) / s for v, m, s in zip(values, self.mean, self.scale, strict=True)]
            logits = [
                b + sum(w * x for w, x in zip(row, z, strict=True))
                for row, b in zip(self.weights, self.bias, strict=True)
            ]
        top = max(logits)
        exps = [math.exp(v - top) for v in logits]
        total = sum(exps)
        return {c: e / total for c, e in zip(CLASSES, exps, strict=True)}

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``judge_model.json``)."""
        return {
            "format": 1,
            "feature_names": list(self.feature_names),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "classes": [c.value for c in CLASSES],
            "weights": [list(r) for r in self.weights],
            "bias": list(self.bias),
            "replace_threshold": self.replace_threshold,
            "keep_threshold": self.keep_threshold,
            "margin": self.margin,
            "learning_rate": self.learning_rate,
            "trees": [[t.to_dict() for t in stage] for stage in self.trees],
            "projection": self.projection.to_dict() if self.projection is not None else None,
            "same_time_keep_threshold": self.same_time_keep_threshold,
            "correction_threshold": self.correction_threshold,
            "meta": dict(self.meta),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgeModel:
        """Read the JSON form.

        Raises:
            ModelFormatError: Another format, other features than this code computes, or
                mismatched shapes.
        """
        if data.get("format") != 1:
            raise ModelFormatError(f"unknown judge model format {data.get('format')!r}")
        names = tuple(str(n) for n in data.get("feature_names", ()))
        if names != FEATURE_NAMES:
            raise ModelFormatError("the judge model was trained on other features")
        if list(data.get("classes", ())) != [c.value for c in CLASSES]:
            raise ModelFormatError("the judge model has other classes")
        weights = tuple(tuple(float(w) for w in row) for row in data["weights"])
        if len(weights) != len(CLASSES) or any(len(r) != len(names) for r in weights):
            raise ModelFormatError("the judge model's weights have the wrong shape")
        return cls(
            feature_names=names,
            mean=tuple(float(v) for v in data["mean"]),
            scale=tuple(float(v) for v in data["scale"]),
            weights=weights,
            bias=tuple(float(v) for v in data["bias"]),
            replace_threshold=float(data["replace_threshold"]),
            keep_threshold=float(data["keep_threshold"]),
            margin=float(data.get("margin", 0.1)),
            meta=dict(data.get("meta", {})),
            trees=tuple(tuple(Tree.from_dict(t) for t in stage) for stage in data.get("trees", ())),
            learning_rate=float(data.get("learning_rate", 0.1)),
            projection=_projection(data.get("projection")),
            same_time_keep_threshold=_optional_float(data.get("same_time_keep_threshold")),
            correction_threshold=_optional_float(data.get("correction_threshold")),
        )


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _projection(data: Any) -> SlotProjection | None:
    if data is None:
        return None
    try:
        return SlotProjection.from_dict(data)
    except (ValueError, KeyError, TypeError) as exc:
        raise ModelFormatError(f"the judge model's slot projection is unreadable: {exc}") from None


@dataclass(frozen=True, slots=True)
class Decision:
    """The learned judge's answer for one pair."""

    verdict: Verdict
    reason: str
    probabilities: Mapping[Verdict, float]
    near_threshold: bool
    """Close enough to a threshold that a stronger judge should look (the cascade)."""


def _percent(p: float) -> str:
    return f"{100 * p:.0f}%"


def decide_pair(model: JudgeModel, features: PairFeatures) -> Decision:
    """The verdict for one pair (see the module docstring for the order of the rules).

    Args:
        model: Fitted parameters and thresholds.
        features: The pair's features and time gates.

    Returns:
        Verdict, a one-line reason, the class probabilities and whether it is near a threshold.
    """
    return decide_with(model, features, model.probabilities(features.values))


def decide_with(
    model: JudgeModel, features: PairFeatures, probs: Mapping[Verdict, float]
) -> Decision:
    """:func:`decide_pair` with the class probabilities already computed."""
    p_r, p_k = probs[Verdict.REPLACE], probs[Verdict.KEEP]
    verdict, why, near = rule_verdict(
        features,
        p_r,
        p_k,
        model.replace_threshold,
        model.keep_threshold,
        model.margin,
        model.same_time_keep_threshold,
        model.correction_threshold,
    )
    shown = f"P(replace) {_percent(p_r)}, P(keep) {_percent(p_k)}"
    return Decision(verdict, _REASONS[why].format(shown=shown), probs, near)


_REASONS: dict[str, str] = {
    "backdated": "the new fact is backdated: the old one is still valid",
    "other_entity": "another environment or work item: both can be current",
    "same_time_keep": "same time, compatible ({shown})",
    "same_time": "stated at nearly the same time, may conflict ({shown})",
    "same_time_correction": "a correction stated at once: same slot, new value ({shown})",
    "additive": "the new fact adds to the old one (also, aussi): both current ({shown})",
    "provisional": (
        "the new fact is temporary or a dated plan: the old one still stands ({shown})"
    ),
    "tentative": (
        "the new fact is hedged, a question, a proposal, a trial or an open plan: "
        "nothing retired ({shown})"
    ),
    "unresolved": (
        "the old fact is about two things together and the new one names at most one: "
        "which one changed is unclear ({shown})"
    ),
    "reaffirms": "the new fact calls off another change and keeps the old value ({shown})",
    "replace": "same slot, new value later ({shown})",
    "value_only": "the same sentence with another value, later: an update ({shown})",
    "correction": "the new fact corrects the old one ({shown})",
    "keep": "both can be current ({shown})",
    "uncertain": "may conflict, evidence insufficient ({shown})",
}


def rule_verdict(
    features: PairFeatures,
    p_r: float,
    p_k: float,
    t_r: float,
    t_k: float,
    margin: float,
    t_same: float | None = None,
    t_corr: float | None = None,
) -> tuple[Verdict, str, bool]:
    """The decision rules of the module docstring, on bare numbers (the threshold search
    calls this for every grid point, so it builds nothing). ``t_same``: the same-minute KEEP
    threshold (``t_k`` when ``None``); ``t_corr``: the correction REPLACE threshold (``t_r``
    when ``None``).

    Returns:
        (verdict, reason key, near the threshold).
    """
    if features.backdated:
        return Verdict.KEEP, "backdated", False
    if features.other_entity:
        return Verdict.KEEP, "other_entity", False
    if features.same_time:
        if features.correction and p_r >= t_r and not features.tentative:
            return Verdict.REPLACE, "same_time_correction", True
        if p_k >= (t_k if t_same is None else t_same) and p_r < t_r:
            return Verdict.KEEP, "same_time_keep", False
        return Verdict.UNCERTAIN, "same_time", True
    if features.tentative:
        return Verdict.UNCERTAIN, "tentative", p_r >= t_r or p_k >= t_k
    if features.unresolved:
        return Verdict.UNCERTAIN, "unresolved", True
    settled = not (features.provisional or features.additive or features.reaffirms)
    if features.correction and settled and t_corr is not None and t_r > p_r >= t_corr:
        return Verdict.REPLACE, "correction", True
    if features.value_only and settled:
        return Verdict.REPLACE, "value_only", True
    if p_r >= t_r:
        if features.provisional:
            return Verdict.KEEP, "provisional", True
        if features.additive:
            return Verdict.KEEP, "additive", True
        if features.reaffirms:
            return Verdict.KEEP, "reaffirms", True
        return Verdict.REPLACE, "replace", p_r < t_r + margin
    if p_k >= t_k:
        return Verdict.KEEP, "keep", p_k < t_k + margin or p_r >= t_r - 0.2
    return Verdict.UNCERTAIN, "uncertain", True
