"""From a model's answer to judgements, the same for every LLM judge (HTTP or agent CLI).

A judge only differs in how it asks (a chat completion, a headless CLI run) and how it
names itself in a reason; reading the answer is strict and shared: no answer, or an answer
that does not parse, is UNCERTAIN with the reason, and a batch answer missing a pair leaves
that pair UNCERTAIN. Nothing is retired on a guess.
"""

from __future__ import annotations

from collections.abc import Callable

from nika_tui.domain.judge_prompt import parse_answer, parse_batch_answer
from nika_tui.domain.verdicts import Judgement

#: ``(text, "")`` or ``(None, why)``: what asking the model returned.
Answer = tuple[str | None, str]
#: The judge's UNCERTAIN judgement for a reason (it prefixes its own name).
Uncertain = Callable[[str], Judgement]


def one_judgement(answer: Answer, judge: str, uncertain: Uncertain) -> Judgement:
    """The verdict of a single-pair answer.

    Args:
        answer: What asking the model returned.
        judge: The judge's name, recorded on the judgement.
        uncertain: Builds the judge's UNCERTAIN judgement for a reason.

    Returns:
        The parsed verdict and reason, or UNCERTAIN with what went wrong.
    """
    text, problem = answer
    if text is None:
        return uncertain(problem)
    verdict, reason, parsed = parse_answer(text)
    return Judgement(verdict, reason, judge) if parsed else uncertain(reason)


def batch_judgements(
    answer: Answer, count: int, judge: str, uncertain: Uncertain
) -> list[Judgement]:
    """One judgement per pair of a batch answer, in the batch's order.

    Args:
        answer: What asking the model returned.
        count: How many pairs the batch held.
        judge: The judge's name, recorded on each judgement.
        uncertain: Builds the judge's UNCERTAIN judgement for a reason.

    Returns:
        ``count`` judgements; a failed call or a pair missing from the answer is UNCERTAIN.
    """
    text, problem = answer
    if text is None:
        return [uncertain(problem)] * count
    return [
        Judgement(verdict, reason, judge) if ok else uncertain(reason)
        for verdict, reason, ok in parse_batch_answer(text, count)
    ]
