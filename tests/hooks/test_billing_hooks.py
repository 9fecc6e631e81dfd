"""The real hook entry point bills transcripts and tool calls (as the agent CLIs run it)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import redis

from nika_tui.billing.log import BillingLog
from nika_tui.services import redis_keys
from tests.hooks.conftest import DATA, TENANT, HookRun, Workspace


def test_stop_hook_bills_the_transcript_and_post_tool_use_bills_the_call(
    run_hook: Callable[..., HookRun],
    workspace: Workspace,
    redis_client: redis.Redis,
    make_tenant: Callable[..., object],
) -> None:
    make_tenant(TENANT)  # an unconfigured tenant is not billed (issue 15: no stray tenant dir)
    stop = workspace.payload("claude/hook_stop.json")
    assert run_hook("claude", "Stop", stop).returncode == 0
    entries = list(BillingLog(TENANT).entries())
    tokens = [e for e in entries if e["kind"] == "tokens"]
    assert tokens and all(e["meta"]["session_id"] == stop["session_id"] for e in tokens)
    assert all(e["meta"]["agent_type"] == "claude-code" for e in tokens)
    day_keys = redis_client.keys(redis_keys.tokens_day(TENANT, "*"))
    assert len(day_keys) == 1
    total = sum(e["input_tokens"] + e["output_tokens"] + e["cache_read_tokens"]
                + e["cache_write_tokens"] for e in tokens)  # fmt: skip
    assert int(redis_client.get(day_keys[0])) == total
    # The same transcript on the next event bills nothing again.
    run_hook("claude", "Stop", stop)
    assert len([e for e in BillingLog(TENANT).entries() if e["kind"] == "tokens"]) == len(tokens)
    post = {**stop, "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_input": {"command": "ls"}, "tool_response": {"stdout": ""}}  # fmt: skip
    assert run_hook("claude", "PostToolUse", json.dumps(post)).returncode == 0
    calls = [e for e in BillingLog(TENANT).entries() if e["kind"] == "tool_call"]
    assert [(c["tool"], c["source"]) for c in calls] == [("Bash", "claude PostToolUse")]
    assert calls[0]["meta"]["session_id"] == stop["session_id"]


def test_codex_notify_bills_the_rollout_it_finds(
    run_hook: Callable[..., HookRun],
    workspace: Workspace,
    redis_client: redis.Redis,
    tmp_path: Path,
    make_tenant: Callable[..., object],
) -> None:
    make_tenant(TENANT)  # an unconfigured tenant is not billed (issue 15: no stray tenant dir)
    codex_home = tmp_path / "codex-home"
    day = datetime.now(UTC)
    folder = codex_home / "sessions" / f"{day:%Y}" / f"{day:%m}" / f"{day:%d}"
    folder.mkdir(parents=True)
    thread = "019ad1e2-7c3b-7a10-9f00-4b2c1d0e9f81"
    rollout = folder / f"rollout-2026-11-30T12-00-00-{thread}.jsonl"
    shutil.copy(DATA / "codex" / "rollout.jsonl", rollout)
    notify = json.loads((DATA / "codex" / "notify_agent_turn_complete.json").read_text())
    notify["cwd"] = str(workspace.project)
    env = {"CODEX_HOME": str(codex_home)}
    assert run_hook("codex", "notify", arg=json.dumps(notify), extra_env=env).returncode == 0
    tokens = [e for e in BillingLog(TENANT).entries() if e["kind"] == "tokens"]
    highest = max(
        json.loads(line)["payload"]["info"]["total_token_usage"]["total_tokens"]
        for line in rollout.read_text().splitlines()
        if '"token_count"' in line and '"total_token_usage"' in line
    )
    assert sum(e["input_tokens"] + e["output_tokens"] + e["cache_read_tokens"] for e in tokens) == (
        highest
    )
    assert {e["model"] for e in tokens} == {"gpt-5-codex"}
    assert {e["meta"]["session_id"] for e in tokens} == {thread}
    assert {e["source"] for e in tokens} == {"codex rollout"}


class ToolCase(NamedTuple):
    test_id: str
    cli: str
    event: str
    payload: dict[str, Any]
    tool: str


TOOL_CASES = [
    ToolCase(
        "gemini-after-tool",
        "gemini",
        "AfterTool",
        # Gemini CLI's AfterTool input: base fields, then the tool, its arguments, its result.
        {"session_id": "g-1", "hook_event_name": "AfterTool", "timestamp": "2026-12-04T03:00:00Z",
         "tool_name": "list_directory", "tool_input": {"dir_path": "."},
         "tool_response": {"llmContent": "a.py", "returnDisplay": "1 item"}},
        "list_directory",
    ),
    ToolCase(
        "opencode-tool-execute-after",
        "opencode",
        "PostToolUse",
        # What nika's plugin sends from OpenCode's tool.execute.after.
        {"session_id": "ses_1", "tool_name": "bash", "call_id": "call_9"},
        "bash",
    ),
    ToolCase(
        "gemini-without-a-tool-name",
        "gemini",
        "AfterTool",
        {"session_id": "g-2", "hook_event_name": "AfterTool"},
        "unknown",
    ),
]  # fmt: skip


@pytest.mark.parametrize("case", TOOL_CASES, ids=[c.test_id for c in TOOL_CASES])
def test_gemini_and_opencode_tool_calls_are_billed(
    case: ToolCase,
    run_hook: Callable[..., HookRun],
    workspace: Workspace,
    make_tenant: Callable[..., object],
) -> None:
    make_tenant(TENANT)
    payload = {**case.payload, "cwd": str(workspace.project)}
    run = run_hook(case.cli, case.event, payload)
    assert run.returncode == 0 and run.stdout == ""  # nothing for the CLI to act on
    calls = [e for e in BillingLog(TENANT).entries() if e["kind"] == "tool_call"]
    assert [(c["tool"], c["source"]) for c in calls] == [(case.tool, f"{case.cli} {case.event}")]
    assert calls[0]["meta"]["session_id"] == payload["session_id"]
    assert calls[0]["meta"]["project_id"] == "acme-api"
