"""Judge evaluation: the file parser (line-numbered errors) and the scores."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import NamedTuple

import pytest

from nika_tui.domain.judge_eval import LabelledPair, evaluate, parse_eval_jsonl, score
from nika_tui.domain.verdicts import Fact, Judgement, Verdict
from nika_tui.errors import EvalFileError

T = "2026-01-05T09:00:00Z"


def line(pair_id: str = "p1", label: str = "KEEP", **over: object) -> str:
    data: dict[str, object] = {
        "id": pair_id,
        "old": {"text": "old fact", "timestamp": T},
        "new": {"text": "new fact", "timestamp": "2026-01-06T09:00:00+00:00"},
        "label": label,
    }
    data.update(over)
    return json.dumps(data)


def test_parses_design_format() -> None:
    text = line("a", "REPLACE", kind="backdated") + "\n\n" + line("b", "uncertain") + "\n"
    pairs = parse_eval_jsonl(text)
    assert [p.id for p in pairs] == ["a", "b"]
    assert pairs[0].label is Verdict.REPLACE and pairs[0].kind == "backdated"
    assert pairs[1].label is Verdict.UNCERTAIN
    assert pairs[0].old.timestamp == datetime(2026, 1, 5, 9, tzinfo=UTC)


def test_naive_timestamp_is_utc() -> None:
    pair = parse_eval_jsonl(line(old={"text": "x", "timestamp": "2026-01-05T09:00:00"}))[0]
    assert pair.old.timestamp.tzinfo is not None


class Bad(NamedTuple):
    test_id: str
    raw: str
    fragment: str


BAD = [
    Bad("not-json", "{nope", "invalid JSON"),
    Bad("not-object", "[1, 2]", "JSON object"),
    Bad("bad-label", line(label="MAYBE"), "label must be one of"),
    Bad("missing-old", line(old=None), "old must be an object"),
    Bad("empty-text", line(new={"text": " ", "timestamp": T}), "new.text"),
    Bad("bad-timestamp", line(new={"text": "x", "timestamp": "yesterday"}), "not ISO-8601"),
    Bad("missing-id", line(id=""), "id must be"),
]


@pytest.mark.parametrize("case", BAD, ids=[c.test_id for c in BAD])
def test_bad_line_is_reported_with_its_number(case: Bad) -> None:
    text = line("ok") + "\n" + case.raw + "\n"
    with pytest.raises(EvalFileError) as info:
        parse_eval_jsonl(text, source="f.jsonl")
    assert info.value.errors[0][0] == 2
    assert case.fragment in info.value.errors[0][1]
    assert info.value.message.startswith("f.jsonl: 1 invalid line(s): line 2:")


def test_duplicate_id_and_empty_file() -> None:
    with pytest.raises(EvalFileError) as info:
        parse_eval_jsonl(line("x") + "\n" + line("x"))
    assert "already used on line 1" in info.value.errors[0][1]
    with pytest.raises(EvalFileError):
        parse_eval_jsonl("\n\n")


def test_all_errors_are_collected() -> None:
    with pytest.raises(EvalFileError) as info:
        parse_eval_jsonl("\n".join(["{"] * 8))
    assert [n for n, _ in info.value.errors] == list(range(1, 9))
    assert "(and 3 more)" in info.value.message


def _pair(pair_id: str, label: Verdict) -> LabelledPair:
    fact = Fact("x", datetime(2026, 1, 1, tzinfo=UTC))
    return LabelledPair(pair_id, fact, fact, label)


def test_scores() -> None:
    R, K, U = Verdict.REPLACE, Verdict.KEEP, Verdict.UNCERTAIN
    rows = [(R, R), (R, U), (K, K), (K, R), (U, U), (U, R), (K, K), (R, R)]
    results = [
        (_pair(str(i), label), Judgement(verdict, "why", "t"))
        for i, (label, verdict) in enumerate(rows)
    ]
    report = score("t", results)
    assert report.n == 8
    assert report.accuracy == pytest.approx(5 / 8)
    # Two pairs judged REPLACE whose label is not REPLACE.
    assert report.wrong_replace_rate == pytest.approx(2 / 8)
    assert report.per_label[R].precision == pytest.approx(2 / 4)
    assert report.per_label[R].recall == pytest.approx(2 / 3)
    assert report.per_label[K].recall == pytest.approx(2 / 3)
    assert report.per_label[U].precision == pytest.approx(1 / 2)
    assert report.confusion[K][R] == 1
    assert {m.id for m in report.misses} == {"1", "3", "5"}
    data = report.to_dict()
    assert set(data) >= {"n", "accuracy", "wrong_replace_rate", "per_label", "confusion"}
    assert data["confusion"]["UNCERTAIN"]["REPLACE"] == 1
    assert data["per_label"]["KEEP"]["support"] == 3


class _Always:
    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict

    @property
    def name(self) -> str:
        return f"always-{self.verdict.value}"

    def judge(self, old: Fact, new: Fact) -> Judgement:
        return Judgement(self.verdict, "constant", self.name)


def test_evaluate_runs_the_judge_on_every_pair() -> None:
    pairs = [_pair("a", Verdict.KEEP), _pair("b", Verdict.REPLACE)]
    report = evaluate(_Always(Verdict.KEEP), pairs)
    assert report.judge == "always-KEEP"
    assert report.accuracy == 0.5
    assert report.wrong_replace_rate == 0.0
    assert report.per_label[Verdict.UNCERTAIN].precision == 0.0
