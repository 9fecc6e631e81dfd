"""Judge evaluation: the labelled-pairs file format and the scores. Pure (the judge is passed in).

File format (JSONL, DESIGN.md "Supersede"), one pair per line, blank lines ignored::

    {"id": "...", "old": {"text": "...", "timestamp": "ISO-8601"},
     "new": {"text": "...", "timestamp": "ISO-8601"}, "label": "REPLACE|KEEP|UNCERTAIN"}

An optional ``"kind"`` string (e.g. ``backdated``, ``hedged``) is kept for per-kind reading;
other extra keys are ignored. A timestamp without a UTC offset is read as UTC.

The report: ``n``, ``accuracy``, ``wrong_replace_rate`` (pairs judged REPLACE whose label is not
REPLACE, over ``n``: the costly error, a true fact lost), ``per_label`` precision / recall,
and ``confusion`` (label → verdict → count).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from nika_tui.domain.ports import Judge
from nika_tui.domain.verdicts import Fact, Judgement, Verdict
from nika_tui.errors import EvalFileError

LABELS: tuple[Verdict, ...] = (Verdict.REPLACE, Verdict.KEEP, Verdict.UNCERTAIN)


@dataclass(frozen=True, slots=True)
class LabelledPair:
    """One (old, new) pair with its known right answer."""

    id: str
    old: Fact
    new: Fact
    label: Verdict
    kind: str = ""


def _parse_timestamp(value: Any, where: str) -> datetime:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}.timestamp must be an ISO-8601 string")
    try:
        stamp = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{where}.timestamp {value!r} is not ISO-8601") from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def _parse_fact(value: Any, where: str) -> Fact:
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be an object with text and timestamp")
    text = value.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{where}.text must be a non-empty string")
    return Fact(text=text, timestamp=_parse_timestamp(value.get("timestamp"), where))


def _parse_line(raw: str) -> LabelledPair:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError("a line must be a JSON object")
    pair_id = data.get("id")
    if not isinstance(pair_id, str | int) or isinstance(pair_id, bool) or str(pair_id) == "":
        raise ValueError("id must be a non-empty string")
    label_raw = data.get("label")
    allowed = "|".join(v.value for v in LABELS)
    if not isinstance(label_raw, str) or label_raw.strip().upper() not in allowed.split("|"):
        raise ValueError(f"label must be one of {allowed}, got {label_raw!r}")
    kind = data.get("kind", "")
    return LabelledPair(
        id=str(pair_id),
        old=_parse_fact(data.get("old"), "old"),
        new=_parse_fact(data.get("new"), "new"),
        label=Verdict(label_raw.strip().upper()),
        kind=kind if isinstance(kind, str) else "",
    )


def parse_eval_jsonl(text: str, source: str = "<input>") -> list[LabelledPair]:
    """Parse an evaluation file; every bad line is reported with its number.

    Args:
        text: The file's content.
        source: Name used in error messages (the file path).

    Returns:
        The pairs, in file order.

    Raises:
        EvalFileError: One or more lines are invalid, an id repeats, or there is no pair.
    """
    pairs: list[LabelledPair] = []
    errors: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            pair = _parse_line(raw)
        except ValueError as exc:
            errors.append((number, str(exc)))
            continue
        if pair.id in seen:
            errors.append((number, f"id {pair.id!r} already used on line {seen[pair.id]}"))
            continue
        seen[pair.id] = number
        pairs.append(pair)
    if not pairs and not errors:
        errors.append((0, "the file holds no pair"))
    if errors:
        raise EvalFileError(source, errors)
    return pairs


@dataclass(frozen=True, slots=True)
class LabelScore:
    """Precision and recall of one verdict."""

    precision: float
    recall: float
    support: int
    """Pairs with this label."""
    predicted: int
    """Pairs judged with this verdict."""


@dataclass(frozen=True, slots=True)
class Miss:
    """A pair the judge got wrong."""

    id: str
    label: Verdict
    verdict: Verdict
    reason: str
    kind: str = ""


@dataclass(frozen=True, slots=True)
class EvalReport:
    """Scores of one judge on one labelled file."""

    judge: str
    n: int
    correct: int
    wrong_replace: int
    per_label: dict[Verdict, LabelScore]
    confusion: dict[Verdict, dict[Verdict, int]]
    misses: list[Miss] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        """Share of pairs judged as labelled."""
        return self.correct / self.n if self.n else 0.0

    @property
    def wrong_replace_rate(self) -> float:
        """Pairs judged REPLACE whose label is not REPLACE, over all pairs."""
        return self.wrong_replace / self.n if self.n else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (``nika judge eval --json``)."""
        return {
            "judge": self.judge,
            "n": self.n,
            "accuracy": round(self.accuracy, 4),
            "wrong_replace_rate": round(self.wrong_replace_rate, 4),
            "wrong_replace": self.wrong_replace,
            "per_label": {
                label.value: {
                    "precision": round(score.precision, 4),
                    "recall": round(score.recall, 4),
                    "support": score.support,
                    "predicted": score.predicted,
                }
                for label, score in self.per_label.items()
            },
            "confusion": {
                label.value: {verdict.value: count for verdict, count in row.items()}
                for label, row in self.confusion.items()
            },
            "misses": [
                {
                    "id": m.id,
                    "label": m.label.value,
                    "verdict": m.verdict.value,
                    "reason": m.reason,
                    "kind": m.kind,
                }
                for m in self.misses
            ],
        }


def score(judge_name: str, results: Iterable[tuple[LabelledPair, Judgement]]) -> EvalReport:
    """Score judgements against labels.

    Args:
        judge_name: Name shown in the report.
        results: Each labelled pair with the judge's answer.

    Returns:
        The report (precision of a verdict never predicted, or recall of a label never
        present, is 0.0).
    """
    confusion: dict[Verdict, dict[Verdict, int]] = {
        label: dict.fromkeys(LABELS, 0) for label in LABELS
    }
    misses: list[Miss] = []
    n = correct = wrong_replace = 0
    for pair, judgement in results:
        n += 1
        confusion[pair.label][judgement.verdict] += 1
        if judgement.verdict is pair.label:
            correct += 1
            continue
        if judgement.verdict is Verdict.REPLACE:
            wrong_replace += 1
        misses.append(Miss(pair.id, pair.label, judgement.verdict, judgement.reason, pair.kind))
    per_label: dict[Verdict, LabelScore] = {}
    for label in LABELS:
        hits = confusion[label][label]
        support = sum(confusion[label].values())
        predicted = sum(confusion[row][label] for row in LABELS)
        per_label[label] = LabelScore(
            precision=hits / predicted if predicted else 0.0,
            recall=hits / support if support else 0.0,
            support=support,
            predicted=predicted,
        )
    return EvalReport(judge_name, n, correct, wrong_replace, per_label, confusion, misses)


def evaluate(judge: Judge, pairs: Sequence[LabelledPair]) -> EvalReport:
    """Run ``judge`` on every pair and score it.

    Args:
        judge: Any :class:`~nika_tui.domain.ports.Judge`.
        pairs: The labelled pairs.

    Returns:
        The report.
    """
    return score(judge.name, ((pair, judge.judge(pair.old, pair.new)) for pair in pairs))
