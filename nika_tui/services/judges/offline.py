"""The ``offline`` judge: the learned model over features and the embedder's slot similarity.

Deterministic, no download, nothing leaves the machine. The decision is pure
(:func:`nika_tui.domain.judge_model.decide_pair`); this adapter adds what needs I/O: the
model file (``nika_tui/assets/judge_model.json``) and the embedder (the memory service's own,
already loaded). Embeddings of the sentences and of their masked forms are computed in one
batch per call of :meth:`OfflineJudge.judge_many` and cached by text, so an old memory judged
again against the next fact costs nothing.

Without an embedder (``nika judge eval --no-embedder``, or a process that has none) the
similarity features fall back to lexical overlap; the model was trained with the embedder, so
that mode is for comparison, not for use.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from nika_tui.domain.fact_parse import mask_values
from nika_tui.domain.judge_entity import align, unshared_words
from nika_tui.domain.judge_features import PairFeatures, PairSimilarity, as_read, pair_features
from nika_tui.domain.judge_model import (
    OFFLINE_JUDGE_NAME,
    Decision,
    JudgeModel,
    ModelFormatError,
    decide_pair,
)
from nika_tui.domain.judge_projection import pair_vector
from nika_tui.domain.ports import Embedder
from nika_tui.domain.verdicts import Fact, Judgement
from nika_tui.errors import ConfigError

MODEL_RESOURCE = "judge_model.json"
CACHE_SIZE = 4096
"""Embeddings kept per judge (texts and masked texts): a few MB, the working set of a tenant."""


def default_model_path() -> Path:
    """Where the shipped model lives (``nika_tui/assets/judge_model.json``)."""
    return Path(str(resources.files("nika_tui.assets").joinpath(MODEL_RESOURCE)))


def load_model(path: Path | None = None) -> JudgeModel:
    """Read a model file.

    Args:
        path: The JSON file (default: the shipped model).

    Returns:
        The model.

    Raises:
        ConfigError: The file is missing, not JSON, or does not match this code.
    """
    path = path or default_model_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return JudgeModel.from_dict(data)
    except FileNotFoundError:
        raise ConfigError(
            f"the offline judge model {path} is missing", "retrain it with `nika judge train`"
        ) from None
    except (ValueError, KeyError, TypeError, ModelFormatError) as exc:
        raise ConfigError(
            f"the offline judge model {path} is unreadable: {exc}",
            "retrain it with `nika judge train`",
        ) from None


@dataclass
class OfflineJudge:
    """The default offline judge (see the module docstring)."""

    model: JudgeModel = field(repr=False)
    embedder: Embedder | None = None
    _cache: OrderedDict[str, list[float]] = field(default_factory=OrderedDict, repr=False)

    @property
    def name(self) -> str:
        """``offline``."""
        return OFFLINE_JUDGE_NAME

    def _embed(self, texts: Sequence[str]) -> dict[str, list[float]]:
        assert self.embedder is not None
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            for text, vector in zip(missing, self.embedder.embed(missing), strict=True):
                self._cache[text] = vector
                if len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
        out: dict[str, list[float]] = {}
        for t in texts:
            if t in self._cache:
                self._cache.move_to_end(t)
                out[t] = self._cache[t]
        if len(out) < len(set(texts)):  # evicted by this very batch: embed again, uncached
            rest = [t for t in dict.fromkeys(texts) if t not in out]
            out.update(zip(rest, self.embedder.embed(rest), strict=True))
        return out

    def read_pairs(
        self, pairs: Sequence[tuple[Fact, Fact]]
    ) -> list[tuple[PairSimilarity, tuple[float, ...]]]:
        """Each pair's similarity (cosines and the model's slot logits) and its pair vector
        (empty without an embedder), embedding every distinct text once."""
        if self.embedder is None:
            return [(PairSimilarity(None, None), ()) for _ in pairs]
        # The spans and masks are those pair_features reads (digit groups joined).
        pairs = [(as_read(old), as_read(new)) for old, new in pairs]
        texts: list[str] = []
        spans = [unshared_words(old.text, new.text) for old, new in pairs]
        swaps = [align(old.text, new.text).word_swaps for old, new in pairs]
        for (old, new), (so, sn), sw in zip(pairs, spans, swaps, strict=True):
            texts += [old.text, new.text, mask_values(old.text), mask_values(new.text)]
            texts += [t for t in (so, sn) if t] + [t for pair in sw for t in pair]
        vectors = self._embed(texts)

        def cos(a: str, b: str) -> float:
            return float(sum(x * y for x, y in zip(vectors[a], vectors[b], strict=True)))

        projection = self.model.projection
        out: list[tuple[PairSimilarity, tuple[float, ...]]] = []
        for (old, new), (so, sn), sw in zip(pairs, spans, swaps, strict=True):
            mo, mn = mask_values(old.text), mask_values(new.text)
            vector = pair_vector(
                vectors[mo],
                vectors[mn],
                vectors[old.text],
                vectors[new.text],
                vectors[so] if so else None,
                vectors[sn] if sn else None,
            )
            slot = projection.logits(vector) if projection is not None else None
            # Nothing unshared or swapped: as far as words go, no other entity is named.
            span = cos(so, sn) if so and sn else 1.0
            swap = min((cos(a, b) for a, b in sw), default=1.0)
            sim = PairSimilarity(cos(old.text, new.text), cos(mo, mn), slot, span, swap)
            out.append((sim, vector))
        return out

    def similarities(self, pairs: Sequence[tuple[Fact, Fact]]) -> list[PairSimilarity]:
        """The embedder's cosines and slot logits for each pair (see :meth:`read_pairs`)."""
        return [sim for sim, _ in self.read_pairs(pairs)]

    def features_many(self, pairs: Sequence[tuple[Fact, Fact]]) -> list[PairFeatures]:
        """Features of every pair (one embedder call for all of them)."""
        sims = self.similarities(pairs)
        return [pair_features(o, n, s) for (o, n), s in zip(pairs, sims, strict=True)]

    def decide_many(self, pairs: Sequence[tuple[Fact, Fact]]) -> list[Decision]:
        """Full decisions (with probabilities and the near-threshold flag) for every pair."""
        return [decide_pair(self.model, f) for f in self.features_many(pairs)]

    def judge_many(self, pairs: Sequence[tuple[Fact, Fact]]) -> list[Judgement]:
        """Judge many pairs with one embedder call.

        Args:
            pairs: (old, new) facts.

        Returns:
            One judgement per pair, in order.
        """
        return [Judgement(d.verdict, d.reason, self.name) for d in self.decide_many(pairs)]

    def judge(self, old: Fact, new: Fact) -> Judgement:
        """Judge one pair (see :meth:`judge_many`)."""
        return self.judge_many([(old, new)])[0]
