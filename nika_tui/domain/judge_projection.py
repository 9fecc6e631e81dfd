"""Slot sameness learned from the embedder's vectors: a linear read-out of a pair. Pure.

The cosine of two sentences folds 384 dimensions into one number, and which of them say
"same attribute of the same thing" is not something a cosine knows. The pair vector keeps
them apart — ``|u − v|`` and ``u ∘ v`` of the two value-masked sentences, then of the two
full sentences (the usual sentence-pair read-out), then the words only one side has
(``s + t`` and ``|s − t|`` of their embeddings: "Sunday", "dev branch" or "Azure" are other
scopes, "count" or "after the triage sprint" are not), then the six embeddings as they are
(decision 588) — and a multinomial logistic regression
fitted by :mod:`nika_tui.domain.judge_fit` turns it into four logits (REPLACE, KEEP,
UNCERTAIN, and "about something else", decision 590). The logits enter the trees as four
features (``slot_*``), next to the cue-word and value-family features, never as the decision
(decision 261).

Nothing here is trained on a particular author's words: the inputs are the embedder's
vectors only, so a reworded subject ("the Postgres box" / "our primary database host")
is read the way the embedder reads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import mul
from typing import Any

SLOT_LOGITS = 4
"""One logit per verdict, in :data:`nika_tui.domain.judge_model.CLASSES` order, then one for
"about something else" (a constructed unrelated pair, :mod:`~nika_tui.domain.
judge_unrelated`; decision 590)."""


def pair_vector(
    masked_old: Sequence[float],
    masked_new: Sequence[float],
    full_old: Sequence[float],
    full_new: Sequence[float],
    span_old: Sequence[float] | None = None,
    span_new: Sequence[float] | None = None,
) -> tuple[float, ...]:
    """The pair read-out: ``|u − v|`` and ``u ∘ v`` of the masked, then the full sentences,
    then ``s + t`` and ``|s − t|`` of the words only one side has, then the six embeddings
    themselves (old, new; masked old, masked new; unshared old, unshared new).

    Not symmetric (decision 588): the first twelve hundred numbers are, the last six blocks
    tell old from new. Which fact came first is still the time gate's business; what the new
    sentence says on its own is not.

    Args:
        masked_old: Embedding of the old fact with its values masked.
        masked_new: Same for the new fact.
        full_old: Embedding of the old fact.
        full_new: Embedding of the new fact.
        span_old: Embedding of the words only the old fact has
            (:func:`~nika_tui.domain.judge_entity.unshared_words`); ``None``: it has none.
        span_new: Same for the new fact.

    Returns:
        ``12 × dimension`` numbers.
    """
    out: list[float] = []
    for u, v in ((masked_old, masked_new), (full_old, full_new)):
        out += [abs(a - b) for a, b in zip(u, v, strict=True)]
        out += [a * b for a, b in zip(u, v, strict=True)]
    zero = [0.0] * len(full_old)
    so, sn = span_old or zero, span_new or zero
    out += [a + b for a, b in zip(so, sn, strict=True)]
    out += [abs(a - b) for a, b in zip(so, sn, strict=True)]
    # Then each side as it is: the new sentence's own wording ("down to", "-> 10m", "maybe")
    # and which side holds the unshared words are things no symmetric read-out can see.
    for side in (full_old, full_new, masked_old, masked_new, so, sn):
        out += side
    return tuple(out)


@dataclass(frozen=True, slots=True)
class SlotProjection:
    """A fitted linear read-out: ``weights @ vector + bias`` (one row per verdict)."""

    weights: tuple[tuple[float, ...], ...]
    bias: tuple[float, ...]

    @property
    def width(self) -> int:
        """The pair vector's length this projection expects."""
        return len(self.weights[0]) if self.weights else 0

    def logits(self, vector: Sequence[float]) -> tuple[float, ...]:
        """The slot logits of one pair vector (see :func:`pair_vector`).

        Raises:
            ValueError: The vector has another length (another embedder).
        """
        if len(vector) != self.width:
            raise ValueError(f"pair vector of {len(vector)} numbers, expected {self.width}")
        # map(mul) rather than a generator: 4,608 products a row, judged on every write.
        return tuple(
            b + sum(map(mul, row, vector)) for row, b in zip(self.weights, self.bias, strict=True)
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON form (weights rounded to 6 digits: the model file stays readable in a diff)."""
        return {
            "weights": [[round(w, 6) for w in row] for row in self.weights],
            "bias": [round(b, 6) for b in self.bias],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SlotProjection:
        """Read the JSON form.

        Raises:
            ValueError: Not :data:`SLOT_LOGITS` rows of equal length.
        """
        weights = tuple(tuple(float(w) for w in row) for row in data["weights"])
        bias = tuple(float(b) for b in data["bias"])
        if len(weights) != SLOT_LOGITS or len(bias) != SLOT_LOGITS:
            raise ValueError(f"the slot projection needs {SLOT_LOGITS} rows")
        if len({len(row) for row in weights}) != 1:
            raise ValueError("the slot projection's rows differ in length")
        return cls(weights, bias)
