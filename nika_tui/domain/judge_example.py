"""A labelled pair turned into features: what the judge's fit learns from. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from nika_tui.domain.judge_features import PairFeatures
from nika_tui.domain.verdicts import Verdict


@dataclass(frozen=True, slots=True)
class Example:
    """One labelled pair, already turned into features."""

    id: str
    features: PairFeatures
    label: Verdict
    group: str = ""
    """Domain (for leave-one-domain-out)."""
    vector: tuple[float, ...] = ()
    """The pair read-out of the embeddings (:func:`~nika_tui.domain.judge_projection.
    pair_vector`); empty without an embedder."""
    counted: bool = True
    """``False`` for a constructed pair (:mod:`~nika_tui.domain.judge_unrelated`): the model
    learns from it, but the thresholds and the cross-validated figures never read it, so they
    stay those of pairs people wrote."""
