"""Context fill and digest from real-format Claude Code and Codex transcripts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nika_tui.errors import TranscriptError
from nika_tui.services.transcripts.common import TranscriptFormat
from nika_tui.services.transcripts.read import read_digest, read_fill

DATA = Path(__file__).resolve().parents[2] / "data"
CLAUDE = DATA / "claude"
CODEX = DATA / "codex"


def test_claude_fill_is_input_plus_cache_tokens_of_last_main_chain_turn() -> None:
    fill = read_fill(CLAUDE / "transcript_session.jsonl")
    # Last non-sidechain assistant usage: 6 + 212 + 18648 (the sidechain's 90k is ignored).
    assert fill.format is TranscriptFormat.CLAUDE_CODE
    assert fill.tokens == 18866
    assert fill.window == 200_000
    assert fill.fill_percent == 9.43
    assert fill.model == "claude-sonnet-4-5-20250929"


def test_claude_1m_window_from_model_name_and_from_size() -> None:
    hinted = read_fill(CLAUDE / "transcript_session.jsonl", model="claude-sonnet-4-5[1m]")
    assert (hinted.window, hinted.fill_percent) == (1_000_000, 1.89)
    big = read_fill(CLAUDE / "transcript_1m.jsonl")
    assert (big.tokens, big.window, big.fill_percent) == (450_100, 1_000_000, 45.01)


def test_claude_compaction_boundary_resets_fill() -> None:
    fill = read_fill(CLAUDE / "transcript_compacted.jsonl")
    assert fill.compacted and fill.tokens == 0


def test_codex_fill_is_last_token_count_over_model_window() -> None:
    fill = read_fill(CODEX / "rollout.jsonl")
    assert fill.format is TranscriptFormat.CODEX
    assert (fill.tokens, fill.window) == (21884, 272_000)
    assert fill.fill_percent == 8.05
    assert fill.model == "gpt-5-codex"


def test_partial_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    shutil.copy(CLAUDE / "transcript_session.jsonl", path)
    with path.open("a") as fh:  # the agent is mid-write: a torn line with a bigger usage
        fh.write('{"type":"assistant","message":{"usage":{"input_tokens":99999,')
    assert read_fill(path).tokens == 18866


def test_five_megabyte_transcript_reads_the_tail(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    lines = (CLAUDE / "transcript_session.jsonl").read_text().splitlines()
    filler = json.dumps(
        {
            "type": "user",
            "sessionId": "s",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "content": "x" * 4000}],
            },
        }
    )
    with path.open("w") as fh:
        fh.write("\n".join(lines[:3]) + "\n")  # an early turn with a small usage
        while fh.tell() < 5 * 1024 * 1024:
            fh.write(filler + "\n")
        fh.write(lines[-2] + "\n")  # the latest main-chain turn
        fh.write(filler + "\n")  # a large tool output after it
    assert path.stat().st_size > 5 * 1024 * 1024
    assert read_fill(path).tokens == 18866


def test_usage_far_before_a_big_tail_is_still_found(tmp_path: Path) -> None:
    path = tmp_path / "far.jsonl"
    lines = (CLAUDE / "transcript_session.jsonl").read_text().splitlines()
    blob = json.dumps({"type": "user", "sessionId": "s", "message": {"content": "y" * 600_000}})
    path.write_text("\n".join(lines) + "\n" + blob + "\n")
    assert read_fill(path).tokens == 18866


def test_no_usage_yet_is_zero_and_unknown_format_is_an_error(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.jsonl"
    fresh.write_text((CLAUDE / "transcript_session.jsonl").read_text().splitlines()[1] + "\n")
    assert read_fill(fresh).tokens == 0
    other = tmp_path / "other.jsonl"
    other.write_text('{"hello": "world"}\n')
    with pytest.raises(TranscriptError, match="not a Claude Code or Codex transcript"):
        read_fill(other)
    with pytest.raises(TranscriptError, match="no transcript"):
        read_fill(tmp_path / "missing.jsonl")


def test_claude_digest_files_tools_todos_decisions() -> None:
    digest = read_digest(CLAUDE / "transcript_session.jsonl")
    touch = digest.files["/home/dev/acme-api/worker/sync.py"]
    assert (touch.edits, touch.added, touch.removed) == (1, 6, 5)
    assert digest.tools == {"Read": 1, "TodoWrite": 1, "Edit": 1, "Bash": 1}
    assert ("Cap retries at 5", "pending") in digest.todos
    texts = [text for _at, text in digest.decisions]
    assert any(t.startswith("Decision: use exponential backoff") for t in texts)
    assert "Subagent scan done." not in texts  # sidechain lines are the subagent's
    assert digest.session_id == "7b1f9c2e-3a4d-4e5f-8a9b-0c1d2e3f4a5b"
    assert digest.prompts[0][1].startswith("The sync worker retries too fast")


def test_codex_digest_patch_files_and_tools() -> None:
    digest = read_digest(CODEX / "rollout.jsonl")
    assert digest.files["Dockerfile"].added == 5
    assert digest.tools == {"shell": 1, "apply_patch": 1}
    assert digest.last_assistant.startswith("Added a Dockerfile")
    assert digest.cwd == "/home/dev/acme-api"


def test_codex_0171_rollout_turns_come_from_item_completed() -> None:
    # Codex 0.171 writes no user_message / agent_message events: the prompt and the answer are
    # item_completed items (and response_item messages, read only when there are no events).
    digest = read_digest(CODEX / "rollout_0171.jsonl")
    assert digest.format is TranscriptFormat.CODEX
    assert [text for _at, text in digest.prompts] == ["The staging server moved to 10.0.9.30."]
    assert digest.last_assistant.startswith("Noted. I have recorded that")
    assert len(digest.decisions) == 1  # the same answer in two record kinds is counted once
    assert digest.session_id == "01a23bdf-9b7e-7fd3-bda2-2985506661a9"


def test_codex_0171_rollout_fill() -> None:
    fill = read_fill(CODEX / "rollout_0171.jsonl")
    raw = [json.loads(line) for line in (CODEX / "rollout_0171.jsonl").read_text().splitlines()]
    info = next(
        r["payload"]["info"]
        for r in reversed(raw)
        if r["type"] == "event_msg" and r["payload"].get("type") == "token_count"
    )
    assert fill.tokens == info["last_token_usage"]["total_tokens"]
    assert fill.window == info["model_context_window"]
