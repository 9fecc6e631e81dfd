"""Recently judged (old, new) pairs and the second judge that re-judges them (debt audit).

Where a recorded verdict comes from:

- a memory retired with ``superseded_by`` by supersede on ingest → the ingest judge said
  REPLACE (REM merges and purges are excluded: no judge decided them);
- a pending review item → the ingest judge said UNCERTAIN;
- a resolved review item → a person decided: approved = REPLACE, rejected = KEEP.

KEEP verdicts of the ingest judge leave no trace in the stores, so the sample holds REPLACE and
UNCERTAIN judge verdicts plus every human decision.

The second judge is always offline (it never sends memories off the machine, whatever the
tenant's privacy mode) and genuinely different from the first: the hand-written ``rules``
judge when the tenant judges with the learned ``offline`` judge, an LLM or the cascade; the
learned ``offline`` judge when the tenant chose ``rules``. (The older *strict* rules judge, a
variant of the same rules, is kept for reading but no longer the second opinion: two judges
that share their parser agree on their shared blind spots.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nika_tui.domain.fact_parse import parse_fact
from nika_tui.domain.iso_time import parse_iso_utc
from nika_tui.domain.judge_rules import Conflict, RulesJudge, compare
from nika_tui.domain.ports import Judge
from nika_tui.domain.tenant import JudgeKind
from nika_tui.domain.verdicts import Fact, Judgement, Verdict
from nika_tui.engine.context import EngineContext
from nika_tui.engine.review import ReviewStatus, list_items

NOT_JUDGED_PREFIXES = ("rem:", "purge:", "hierarchy:")
"""Retire reasons written by the REM pass / purge: no judge decided those retirements."""


@dataclass(frozen=True, slots=True)
class JudgedPair:
    """A pair with the verdict recorded for it."""

    old_id: str
    new_id: str
    old_text: str
    new_text: str
    old_valid_from: datetime
    new_valid_from: datetime
    verdict: Verdict
    source: str
    at: datetime
    judge: str = ""
    """Who gave the recorded verdict: the ingest judge's name, or ``person``."""


class StrictRulesJudge:
    """The rules judge, but REPLACE only on explicit evidence (else UNCERTAIN)."""

    def __init__(self) -> None:
        self._rules = RulesJudge()

    @property
    def name(self) -> str:
        """``rules-strict``."""
        return "rules-strict"

    def judge(self, old: Fact, new: Fact) -> Judgement:
        """Judge like the rules judge, downgrading weakly evidenced replacements."""
        first = self._rules.judge(old, new)
        if first.verdict is not Verdict.REPLACE:
            return Judgement(first.verdict, first.reason, self.name)
        cmp = compare(parse_fact(old.text), parse_fact(new.text))
        if cmp.conflict in (Conflict.EXPLICIT, Conflict.RETRACTION):
            return Judgement(Verdict.REPLACE, first.reason, self.name)
        return Judgement(
            Verdict.UNCERTAIN, f"replacement without explicit evidence: {first.reason}", self.name
        )


def second_judge(ctx: EngineContext, tenant_id: str) -> Judge:
    """The offline judge that re-judges recorded pairs for ``judge_disagreement``: another
    method than the tenant's own (module docstring)."""
    if ctx.tenant(tenant_id).judge.kind is JudgeKind.RULES:
        from nika_tui.services.judges.factory import offline_judge

        return offline_judge(ctx.embedder)
    return RulesJudge()


def recent_judged_pairs(
    ctx: EngineContext,
    tenant_id: str,
    retired_payloads: Sequence[Mapping[str, Any]],
    limit: int,
) -> list[JudgedPair]:
    """The ``limit`` most recently judged pairs of the tenant, newest first.

    Args:
        ctx: Engine context.
        tenant_id: The tenant.
        retired_payloads: Payloads of recently retired memories (from the audit's inventory).
        limit: How many pairs at most.

    Returns:
        Pairs whose both sides could be read.
    """
    pairs: list[JudgedPair] = []
    for item in list_items(ctx.redis, tenant_id, include_resolved=True):
        if item.status is ReviewStatus.OBSOLETE:
            continue  # closed unanswered: nobody judged the pair
        verdict = {
            ReviewStatus.PENDING: Verdict.UNCERTAIN,
            ReviewStatus.APPROVED: Verdict.REPLACE,
            ReviewStatus.REJECTED: Verdict.KEEP,
        }[item.status]
        source = "review" if item.status is ReviewStatus.PENDING else "person"
        pairs.append(
            JudgedPair(
                item.old_id,
                item.new_id,
                item.old_text,
                item.new_text,
                item.old_valid_from,
                item.new_valid_from,
                verdict,
                source,
                item.resolved_at or item.created_at,
                item.judge if item.status is ReviewStatus.PENDING else "person",
            )
        )
    reviewed = {(p.old_id, p.new_id) for p in pairs}
    news: dict[str, Mapping[str, Any]] = {}
    wanted = [
        p
        for p in retired_payloads
        if p.get("superseded_by")
        and not str(p.get("retire_reason") or "").startswith(NOT_JUDGED_PREFIXES)
        and (str(p.get("id")), str(p.get("superseded_by"))) not in reviewed
    ]
    ids = [str(p["superseded_by"]) for p in wanted]
    from nika_tui.domain.memory import Layer

    for layer in Layer:
        for found in ctx.vectors.retrieve(tenant_id, layer, [i for i in ids if i not in news]):
            news[found.id] = found.payload
    for p in wanted:
        new = news.get(str(p["superseded_by"]))
        old_valid, at = parse_iso_utc(p.get("valid_from")), parse_iso_utc(p.get("retired_at"))
        new_valid = parse_iso_utc(new.get("valid_from")) if new else None
        if new is None or old_valid is None or new_valid is None or at is None:
            continue
        pairs.append(
            JudgedPair(
                str(p.get("id")),
                str(p["superseded_by"]),
                str(p.get("text", "")),
                str(new.get("text", "")),
                old_valid,
                new_valid,
                Verdict.REPLACE,
                "ingest",
                at,
                str(p.get("retire_reason") or "").split(":", 1)[0],
            )
        )
    pairs.sort(key=lambda x: x.at, reverse=True)
    return pairs[:limit]
