"""The judge cascade: the offline judge settles the clear cases, an LLM judge the rest.

Every pair goes to the offline judge first (:class:`~.offline.OfflineJudge`). The pairs it
answers UNCERTAIN, or answers near one of its thresholds, go to the LLM tier (``agent-cli`` or
``http``) in **one batched call** per :meth:`CascadeJudge.judge_many`. The LLM's answer is
taken when it parsed; when the LLM call fails or a pair is missing from its answer, the
offline verdict stands (an UNCERTAIN stays UNCERTAIN: the review queue, never a guess).

The factory builds a cascade only where the tenant's privacy mode allows the LLM tier
(:mod:`.factory`); under ``local`` privacy only a loopback ``http`` endpoint qualifies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from nika_tui.domain.verdicts import Fact, Judgement, Verdict
from nika_tui.services.judges.offline import OfflineJudge

CASCADE_JUDGE_PREFIX = "cascade"


class BatchJudge(Protocol):
    """A judge that answers many pairs in one call (the LLM tier)."""

    @property
    def name(self) -> str: ...

    def judge_batch(self, pairs: list[tuple[Fact, Fact]]) -> list[Judgement]: ...


@dataclass
class CascadeJudge:
    """Offline first, LLM for the uncertain and near-threshold pairs (module docstring)."""

    offline: OfflineJudge
    llm: BatchJudge
    max_batch: int = 20
    """Pairs per LLM call (a long batch slows the model's answer and risks truncation)."""

    @property
    def name(self) -> str:
        """``cascade:offline+{llm}``."""
        return f"{CASCADE_JUDGE_PREFIX}:{self.offline.name}+{self.llm.name}"

    def judge_many(self, pairs: Sequence[tuple[Fact, Fact]]) -> list[Judgement]:
        """Judge many pairs: offline for all, the LLM for the escalated ones in batches.

        Args:
            pairs: (old, new) facts.

        Returns:
            One judgement per pair; ``judge`` names the tier that decided it.
        """
        decisions = self.offline.decide_many(pairs)
        out = [Judgement(d.verdict, d.reason, self.offline.name) for d in decisions]
        escalate = [
            i for i, d in enumerate(decisions) if d.verdict is Verdict.UNCERTAIN or d.near_threshold
        ]
        for start in range(0, len(escalate), self.max_batch):
            chunk = escalate[start : start + self.max_batch]
            answers = self.llm.judge_batch([tuple(pairs[i]) for i in chunk])  # type: ignore[misc]
            for i, answer in zip(chunk, answers, strict=True):
                if _parsed(answer, self.llm.name):
                    out[i] = Judgement(answer.verdict, answer.reason, self.llm.name)
                elif out[i].verdict is Verdict.REPLACE:
                    # A near-threshold REPLACE the LLM could not confirm is not applied.
                    out[i] = Judgement(
                        Verdict.UNCERTAIN, f"{out[i].reason}; {answer.reason}", self.offline.name
                    )
        return out

    def judge(self, old: Fact, new: Fact) -> Judgement:
        """Judge one pair (see :meth:`judge_many`)."""
        return self.judge_many([(old, new)])[0]


def _parsed(answer: Judgement, llm_name: str) -> bool:
    """Whether the LLM actually answered (its failures are UNCERTAIN with a prefixed reason)."""
    failed_prefixes = ("http judge:", "claude:", "codex:")
    return not (
        answer.verdict is Verdict.UNCERTAIN and answer.reason.startswith(failed_prefixes)
    ) and bool(llm_name)
