"""The cascade: offline first, a batched LLM tier (an OpenAI-compatible stand-in on loopback)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from nika_tui.domain.judge_prompt import parse_batch_answer
from nika_tui.domain.verdicts import Fact, Verdict
from nika_tui.services.judges.cascade import CascadeJudge
from nika_tui.services.judges.http import HttpJudge
from nika_tui.services.judges.offline import OfflineJudge, load_model
from tests.support.judge_server import BatchChatServer

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@pytest.fixture
def batch_server() -> Iterator[BatchChatServer]:
    server = BatchChatServer()
    yield server
    server.close()


def _pair(old: str, new: str, minutes: int = 60 * 24 * 30) -> tuple[Fact, Fact]:
    return Fact(old, T0), Fact(new, T0 + timedelta(minutes=minutes))


def test_http_batch_is_one_request_for_many_pairs(batch_server: BatchChatServer) -> None:
    judge = HttpJudge(endpoint=batch_server.url, model="m")
    pairs = [
        _pair("Staging is on host-a.", "Staging moved to host-b."),
        _pair("CI uses Jenkins.", "CI also runs linting."),
        _pair("Prod port is 80.", "Prod moved to port 443."),
    ]
    verdicts = [j.verdict for j in judge.judge_batch(pairs)]
    assert verdicts == [Verdict.REPLACE, Verdict.KEEP, Verdict.REPLACE]
    assert len(batch_server.batches()) == 1
    assert "JSON array" in batch_server.batches()[0]["messages"][0]["content"]


def test_missing_or_unparsable_batch_answers_are_uncertain(batch_server: BatchChatServer) -> None:
    judge = HttpJudge(endpoint=batch_server.url, model="m")
    pairs = [_pair("A is 1.", "A moved to 2."), _pair("B is 1.", "B moved to 2.")]
    batch_server.mode = "drop"
    first, second = judge.judge_batch(pairs)
    assert first.verdict is Verdict.REPLACE
    assert second.verdict is Verdict.UNCERTAIN and "no entry" in second.reason
    batch_server.mode = "garbage"
    assert {j.verdict for j in judge.judge_batch(pairs)} == {Verdict.UNCERTAIN}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('[{"id": "p1", "verdict": "KEEP", "reason": "x"}]', [Verdict.KEEP, Verdict.UNCERTAIN]),
        (
            '```json\n[{"id": "p2", "verdict": "REPLACE"}]\n```',
            [Verdict.UNCERTAIN, Verdict.REPLACE],
        ),
        ('[{"id": "p1", "verdict": "replace-ish"}]', [Verdict.UNCERTAIN, Verdict.UNCERTAIN]),
        (
            '[{"id": "p1", "verdict": "REPLACE"}, {"id": "p1", "verdict": "KEEP"}]',
            [Verdict.UNCERTAIN, Verdict.UNCERTAIN],
        ),
        ("REPLACE all of them", [Verdict.UNCERTAIN, Verdict.UNCERTAIN]),
    ],
)
def test_batch_parsing_is_strict(raw: str, expected: list[Verdict]) -> None:
    assert [v for v, _, _ in parse_batch_answer(raw, 2)] == expected


def test_cascade_sends_only_unclear_pairs_to_the_llm(batch_server: BatchChatServer) -> None:
    offline = OfflineJudge(load_model())  # lexical fallback: no embedder needed to route
    cascade = CascadeJudge(offline, HttpJudge(endpoint=batch_server.url, model="m"))
    backdated = (Fact("Prod DB is db-2.", T0), Fact("Prod DB was db-1.", T0 - timedelta(days=90)))
    hedged = _pair("The cache TTL is 60 s.", "Maybe the cache TTL moved to 30 s, not sure?")
    answers = cascade.judge_many([backdated, hedged])
    # The backdated pair is settled offline (KEEP); the hedged one is escalated, in one call.
    assert answers[0].verdict is Verdict.KEEP and answers[0].judge == "offline"
    assert answers[1].judge == "http" and answers[1].verdict is Verdict.REPLACE
    assert len(batch_server.batches()) == 1
    sent = batch_server.batches()[0]["messages"][-1]["content"]
    assert "db-1" not in sent and "cache TTL" in sent


def test_cascade_keeps_the_offline_verdict_when_the_llm_fails(
    batch_server: BatchChatServer,
) -> None:
    batch_server.mode = "garbage"
    cascade = CascadeJudge(OfflineJudge(load_model()), HttpJudge(endpoint=batch_server.url))
    answer = cascade.judge(*_pair("The cache TTL is 60 s.", "Maybe the TTL is 30 s?"))
    assert answer.verdict is Verdict.UNCERTAIN and answer.judge == "offline"
