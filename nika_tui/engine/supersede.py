"""Supersede on ingest: replace instead of stack (seed 2, DESIGN "Supersede").

Candidates are the *current* memories of the same tenant, layer and project whose dense cosine
with the new memory is at least :data:`SUPERSEDE_MIN_COSINE`. Each (old, new) pair goes to the
tenant's judge, oldest candidate first (by valid time). The judge only answers; this module
applies the answer:

- ``REPLACE`` → the old memory is retired (superseded by the new one);
- ``KEEP`` → nothing happens;
- ``UNCERTAIN`` → both stay current and the pair enters the review queue.

A judge failure counts as UNCERTAIN, and so does a REPLACE whose "new" fact is older by valid
time than the old one (a backdated fact never retires a newer one, whatever the judge says).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from nika_tui.domain.memory import Layer, MemoryRecord, Status
from nika_tui.domain.ports import Judge, PointFilter
from nika_tui.domain.verdicts import Fact, Judgement, Verdict
from nika_tui.engine.context import EngineContext
from nika_tui.engine.retire import retire
from nika_tui.engine.review import ReviewItem, enqueue, new_item
from nika_tui.errors import JudgeError

SUPERSEDE_MIN_COSINE = 0.40
"""Cosine (all-MiniLM-L6-v2) from which an existing memory is a supersede candidate.

Chosen on the real embedder (``benchmarks/memory_thresholds.py``, docs/memory.md): the 12
(old, new) restatements of one fact with another value (EN and FR) scored 0.405–0.918, the 10
pairs of unrelated facts of one project −0.01–0.405. At 0.40 every restatement is judged and
one unrelated pair in ten costs a judge call; at 0.45–0.55 one restatement in twelve is never
judged and stays current beside its replacement. A missed candidate is the worse error (a
stale fact served as current); an extra candidate only costs a judge call, since the judge,
not the cosine, decides (e.g. "production server" vs "staging server" at 0.75 is KEEP).
"""

MAX_CANDIDATES = 8
"""At most this many nearest current memories are judged per new memory."""


@dataclass
class SupersedeOutcome:
    """What supersede did for one new memory."""

    retired: list[str] = field(default_factory=list)
    reviews: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    judgements: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Candidate:
    """A current memory close to the new one."""

    record: MemoryRecord
    cosine: float


def find_candidates(
    ctx: EngineContext,
    new: MemoryRecord,
    vector: Sequence[float],
    exclude: Collection[str] = (),
) -> list[Candidate]:
    """Current memories of the same tenant/layer/project at or above the threshold, oldest first."""
    # The new memory (already stored) is excluded by the store: it is always its own nearest
    # neighbour, and converting its payload was a tenth of the store side of an ingest.
    # ``exclude`` (later memories of the same batch) is filtered here: a set of 100 ids in
    # every query's filter cost more than the few it removes.
    flt = PointFilter(
        equals={"status": Status.CURRENT.value, "project_id": new.meta.project_id},
        exclude_ids=(new.id,),
    )
    hits = ctx.vectors.search_dense(
        new.tenant_id, new.layer, vector, flt=flt, limit=MAX_CANDIDATES + len(exclude)
    )
    found = [
        Candidate(MemoryRecord.from_payload(dict(h.payload)), h.score)
        for h in hits
        if h.id != new.id and h.id not in exclude and h.score >= SUPERSEDE_MIN_COSINE
    ][:MAX_CANDIDATES]
    return sorted(found, key=lambda c: (c.record.valid_from, c.record.asserted_at, c.record.id))


def _judge_all(judge: Judge, olds: Sequence[MemoryRecord], new: MemoryRecord) -> list[Judgement]:
    """Every candidate judged against ``new``; one batched call when the judge offers it
    (the offline judge embeds all texts at once, the cascade asks its LLM once)."""
    pairs = [(Fact(o.text, o.valid_from), Fact(new.text, new.valid_from)) for o in olds]
    many = getattr(judge, "judge_many", None)
    try:
        if callable(many):
            raw: list[Judgement] = list(many(pairs))
        else:
            raw = [judge.judge(o, n) for o, n in pairs]
    except JudgeError as exc:
        raw = [Judgement(Verdict.UNCERTAIN, f"judge failed: {exc.message}", judge.name)] * len(
            pairs
        )
    return [_checked(judge, old, new, j) for old, j in zip(olds, raw, strict=True)]


def _checked(judge: Judge, old: MemoryRecord, new: MemoryRecord, judgement: Judgement) -> Judgement:
    if judgement.verdict is Verdict.REPLACE and new.valid_from < old.valid_from:
        return Judgement(
            Verdict.UNCERTAIN,
            f"judge said REPLACE but the new fact is older by valid time ({judgement.reason})",
            judgement.judge or judge.name,
        )
    if not judgement.judge:
        judgement = Judgement(judgement.verdict, judgement.reason, judge.name)
    return judgement


def supersede(
    ctx: EngineContext,
    new: MemoryRecord,
    vector: Sequence[float],
    exclude: Collection[str] = (),
    reviews: list[ReviewItem] | None = None,
) -> SupersedeOutcome:
    """Judge every candidate against ``new`` (already stored) and apply the verdicts.

    ``exclude``: ids never to treat as candidates (memories later in the same ingest batch).
    ``reviews``: when given, UNCERTAIN pairs are added to it for the caller to queue with
    :func:`~nika_tui.engine.review.enqueue_many` (once per batch); otherwise queued at once.
    A retirement is always applied at once: a later memory of the batch must not see it current.
    """
    outcome = SupersedeOutcome()
    if new.layer is not Layer.SEMANTIC:
        # Episodic memories are events ("deployed v1.2 on Monday"): a later event does not
        # make an earlier one untrue, so only semantic facts supersede each other.
        return outcome
    candidates = find_candidates(ctx, new, vector, exclude)
    if not candidates:
        return outcome
    judge = ctx.judge_for(new.tenant_id)  # once per memory: it reads the tenant's config
    judgements = _judge_all(judge, [c.record for c in candidates], new)
    for cand, judgement in zip(candidates, judgements, strict=True):
        old = cand.record
        outcome.judgements.append(
            {
                "old_id": old.id,
                "verdict": judgement.verdict.value,
                "reason": judgement.reason,
                "judge": judgement.judge,
                "cosine": f"{cand.cosine:.3f}",
            }
        )
        if judgement.verdict is Verdict.REPLACE:
            retire(
                ctx,
                new.tenant_id,
                new.layer,
                old.id,
                superseded_by=new.id,
                reason=f"{judgement.judge}: {judgement.reason}"[:500],
            )
            outcome.retired.append(old.id)
        elif judgement.verdict is Verdict.UNCERTAIN:
            if reviews is None:
                outcome.reviews.append(enqueue(ctx, old, new, judgement).id)
            else:
                reviews.append(new_item(ctx, old, new, judgement))
                outcome.reviews.append(reviews[-1].id)
        else:
            outcome.kept.append(old.id)
    return outcome
