"""Gemini CLI and OpenCode usage billed: Gemini from its session file (a message written again
once its usage is known, history rewrites repeating old messages), OpenCode from the answers
its plugin reports; each answer billed once, counted toward the day's tokens."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import redis

from nika_tui.billing.collect import collect_transcript, collect_usages
from nika_tui.billing.log import BillingLog
from nika_tui.billing.usage import opencode_usages
from nika_tui.services import redis_keys

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
META = {"session_id": "s-1", "agent_type": "gemini-cli", "trigger": "hook"}
TOKENS = {"input": 5000, "output": 40, "cached": 1200, "thoughts": 60, "tool": 7, "total": 5107}


def _lines(*records: dict[str, object]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def _answer(ident: str, tokens: dict[str, int] | None = None) -> dict[str, object]:
    msg: dict[str, object] = {"id": ident, "timestamp": "2026-12-03T11:59:00Z", "type": "gemini",
                              "content": "done", "model": "gemini-3.1-pro-preview"}  # fmt: skip
    if tokens is not None:
        msg["tokens"] = tokens
    return msg


def test_gemini_session_billed_once_per_answer(tmp_path: Path, redis_client: redis.Redis) -> None:
    path = tmp_path / "session-2026-12-03T11-58-ab12cd34.jsonl"
    header = {"sessionId": "s-1", "projectHash": "abc", "startTime": "2026-12-03T11:58:00Z",
              "kind": "main"}  # fmt: skip
    user = {"id": "u1", "timestamp": "2026-12-03T11:58:30Z", "type": "user", "content": "hi"}
    # The answer is written first without usage, then again (same id) once usage is known.
    path.write_text(_lines(header, user, _answer("g1")))
    assert collect_transcript("acme", path, META, NOW, redis_client) == []
    with path.open("a") as fh:
        fh.write(_lines(_answer("g1", TOKENS)))
    entries = collect_transcript("acme", path, META, NOW, redis_client)
    assert [(e["input_tokens"], e["output_tokens"], e["cache_read_tokens"]) for e in entries] == [
        (5000 - 1200 + 7, 40 + 60, 1200)
    ], "cached out of input, thoughts as output, tool prompt as input"
    assert entries[0]["source"] == "gemini-cli session"
    assert entries[0]["model"] == "gemini-3.1-pro-preview"
    # A compression rewrites the history: the old answer comes back, a new one is added.
    rewrite = {"$set": {"messages": [user, _answer("g1", TOKENS), _answer("g2", TOKENS)]}}
    with path.open("a") as fh:
        fh.write(_lines(rewrite))
    again = collect_transcript("acme", path, META, NOW, redis_client)
    assert [e["key"] for e in again] == ["gemini-g2"]
    day = redis_client.get(redis_keys.tokens_day("acme", NOW.strftime("%Y%m%d")))
    assert int(str(day)) == 2 * TOKENS["total"]


def test_opencode_answers_billed_once_each(redis_client: redis.Redis) -> None:
    answer = {"id": "msg_1", "model": "claude-sonnet-4-5",
              "tokens": {"input": 900, "output": 30, "reasoning": 12,
                         "cache": {"read": 4000, "write": 100}}}  # fmt: skip
    second = {**answer, "id": "msg_2"}
    usages = opencode_usages([answer, {"id": "msg_0"}, "junk"], NOW.isoformat())
    assert [(u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens)
            for u in usages] == [(900, 42, 4000, 100)]  # fmt: skip
    first = collect_usages("acme", "opencode:s-1", usages, "opencode plugin", META, NOW,
                           redis_client)  # fmt: skip
    # The next idle reports the same answer again beside a new one: only the new one is billed.
    later = opencode_usages([answer, second], NOW.isoformat())
    more = collect_usages("acme", "opencode:s-1", later, "opencode plugin", META, NOW,
                          redis_client)  # fmt: skip
    assert [e["key"] for e in first] == ["opencode-msg_1"]
    assert [e["key"] for e in more] == ["opencode-msg_2"]
    assert len([e for e in BillingLog("acme").entries() if e["kind"] == "tokens"]) == 2
    day = redis_client.get(redis_keys.tokens_day("acme", NOW.strftime("%Y%m%d")))
    assert int(str(day)) == 2 * (900 + 42 + 4000 + 100)
