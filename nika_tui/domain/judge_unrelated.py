"""Unrelated candidates: the old fact of one labelled pair beside the new fact of another
pair of the same project (its domain) whose subject shares no words with it.

No corpus pair is unrelated: each author wrote an old and a new fact about one slot. A judge
fitted on the corpus alone never learns that update wording ("moved to … on Monday") is
evidence only on the same slot, and the eighth round retired "Deploys happen on Fridays"
for a new staging address (decisions 588, 589). Supersede hands the judge exactly such
pairs: every stored memory of the tenant within :data:`~nika_tui.engine.supersede.
SUPERSEDE_MIN_COSINE` of the new one. These pairs teach the judge that (labelled KEEP, never
counted in its thresholds or figures) and measure it (``benchmarks/judge_unrelated.py``).

Pure: the caller gives each text's unit vector.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta

import numpy as np

from nika_tui.domain.fact_parse import parse_fact
from nika_tui.domain.judge_eval import LabelledPair
from nika_tui.domain.verdicts import Fact, Verdict

MAX_SUBJECT_OVERLAP = 0.15
"""Overlap (Jaccard of the subject stems and values of the two facts) under which two facts are
taken as unrelated. Values count: "Expense notes go through Expensya" and "we moved to
Spendesk, Expensya is cancelled" share little but the value, and are one slot."""
MAX_PAIR_COSINE = 0.6
"""Two pairs whose old facts are this close are taken as about one subject, and not crossed:
the new fact of one may well update the old fact of the other in other words."""
UNRELATED_GAP = timedelta(days=7)
"""The constructed new fact's valid time after the old one when its own pair's gap is under
:data:`MIN_GAP` or negative: late enough that no same-time gate decides the pair, so the
pair's words alone must say KEEP."""
MIN_GAP = timedelta(hours=1)
UNRELATED_KIND = "unrelated"
TRAIN_PER_PAIR = 2
"""Constructed pairs per old fact in training: its two nearest unrelated new facts."""
TRAIN_MIN_COSINE = 0.35
"""A little under supersede's candidate floor (0.40), so the judge also learns the edge."""


def _words(text: str) -> frozenset[str]:
    """The subject stems and the values of a fact (not its stopwords or cue words)."""
    parsed = parse_fact(text)
    values = (word for family in parsed.values.values() for v in family for word in v.split())
    return parsed.content.union(values)


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def unrelated_pairs(
    pairs: Sequence[tuple[LabelledPair, str]],
    vector_of: Callable[[str], Sequence[float]],
    per_pair: int,
    min_cosine: float,
    new_labels: frozenset[Verdict] | None = None,
) -> list[tuple[LabelledPair, str]]:
    """For each pair ``i``, up to ``per_pair`` constructed pairs (``old_i``, ``new_j``).

    ``j`` is another pair of the same group; the words of ``old_i`` / ``new_j``, of the two
    old facts and of the two new facts all overlap under :data:`MAX_SUBJECT_OVERLAP`, and the
    two old facts' cosine is under :data:`MAX_PAIR_COSINE` (so the two pairs are about
    different things). Nearest first by the cosine of ``old_i`` and ``new_j``, at least
    ``min_cosine``. Labelled KEEP, kind :data:`UNRELATED_KIND`, id ``"i~j"``; the new fact
    is as far after ``old_i`` as it was after ``old_j``.

    Args:
        pairs: Labelled pairs with their group (domain); pairs without a group are skipped.
        vector_of: A text's unit vector.
        per_pair: Constructed pairs per old fact (the nearest ones).
        min_cosine: The least cosine a constructed pair has (supersede's candidate floor).
        new_labels: Take ``new_j`` only from pairs with these labels (all when ``None``).

    Returns:
        ``(pair, group)`` in a stable order (by ``i``, then nearest first).
    """
    subject = {t: _words(t) for p, _ in pairs for t in (p.old.text, p.new.text)}
    vec = {t: np.asarray(vector_of(t), dtype=np.float64) for t in subject}
    by_group: dict[str, list[LabelledPair]] = {}
    for p, g in pairs:
        if g:
            by_group.setdefault(g, []).append(p)
    out: list[tuple[LabelledPair, str]] = []
    for group, members in sorted(by_group.items()):
        for a in members:
            va = vec[a.old.text]
            found: list[tuple[float, str, LabelledPair]] = []
            for b in members:
                if b is a or (new_labels is not None and b.label not in new_labels):
                    continue
                if (
                    _overlap(subject[a.old.text], subject[b.new.text]) >= MAX_SUBJECT_OVERLAP
                    or _overlap(subject[a.old.text], subject[b.old.text]) >= MAX_SUBJECT_OVERLAP
                    or _overlap(subject[a.new.text], subject[b.new.text]) >= MAX_SUBJECT_OVERLAP
                ):
                    continue
                if float(va @ vec[b.old.text]) >= MAX_PAIR_COSINE:
                    continue
                cos = float(va @ vec[b.new.text])
                if cos >= min_cosine:
                    found.append((-cos, b.id, b))
            for _, _, b in sorted(found)[:per_pair]:
                # The gap its author gave it (minutes to years), so time says nothing here.
                gap = b.new.timestamp - b.old.timestamp
                new = Fact(b.new.text, a.old.timestamp + (gap if gap >= MIN_GAP else UNRELATED_GAP))
                pair = LabelledPair(f"{a.id}~{b.id}", a.old, new, Verdict.KEEP, UNRELATED_KIND)
                out.append((pair, group))
    return out


def texts_of(pairs: Sequence[tuple[LabelledPair, str]]) -> list[str]:
    """Every distinct text :func:`unrelated_pairs` will ask a vector of, in a stable order."""
    seen: dict[str, None] = {}
    for p, _ in pairs:
        seen.setdefault(p.old.text, None)
        seen.setdefault(p.new.text, None)
    return list(seen)


def as_vectors(
    texts: Sequence[str], vectors: Sequence[Sequence[float]]
) -> Mapping[str, Sequence[float]]:
    """``texts`` → ``vectors`` (the embedder's answer, in order)."""
    return dict(zip(texts, vectors, strict=True))
