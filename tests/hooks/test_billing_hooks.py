"""The real hook entry point bills transcripts and PostToolUse calls (as the agent CLIs run it)."""

from __future__ import annotations

import json
from collections.abc import Callable

import redis

from nika_tui.billing.log import BillingLog
from nika_tui.services import redis_keys
from tests.hooks.conftest import TENANT, HookRun, Workspace


def test_stop_hook_bills_the_transcript_and_post_tool_use_bills_the_call(
    run_hook: Callable[..., HookRun],
    workspace: Workspace,
    redis_client: redis.Redis,
) -> None:
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
