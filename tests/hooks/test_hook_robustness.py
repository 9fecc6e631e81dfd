"""A hook never blocks or breaks the agent: whatever the payload or the store's state, every
event of every CLI (Claude Code, Codex, Gemini CLI, OpenCode's plugin) exits 0 and prints
nothing or one valid JSON object."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from nika_tui.hooks import claude, codex, gemini, opencode
from tests.hooks.conftest import HookRun, Workspace

Run = Callable[..., HookRun]
pytestmark = pytest.mark.slow  # one process per event and payload
EVENTS = (
    [("claude", e) for e in claude.EVENTS]
    + [("codex", e) for e in codex.EVENTS]
    + [("gemini", e) for e in gemini.EVENTS]
    + [("opencode", e) for e in opencode.EVENTS]
)
BAD_PAYLOADS: list[Any] = [
    "not json",
    {"session_id": 42, "transcript_path": ["x"], "cwd": None, "prompt": {"a": 1}},
    {"session_id": "s", "transcript_path": "/nonexistent/t.jsonl", "source": "compact"},
    # The fields only Gemini CLI and OpenCode's plugin send, each of the wrong type.
    {
        "session_id": "s",
        "prompt_response": [1],
        "trigger": 7,
        "last_prompt": {},
        "last_assistant_message": 3,
        "tokens": "many",
        "model": ["m"],
        "context_window": "big",
        "usage": "x",
        "tool_name": None,
    },
]


OWN_FIELDS: dict[str, dict[str, Any]] = {
    # Well-formed fields of Gemini CLI's hooks and of our OpenCode plugin (opencode_plugin.js),
    # so the store is reached, and found down, on each event's own path.
    "gemini": {"prompt_response": "Done.", "trigger": "manual", "source": "startup",
               "tool_name": "read_file", "tool_input": {}, "tool_response": {}},
    "opencode": {"last_prompt": "Fix it.", "last_assistant_message": "Done.",
                 "tokens": {"input": 1200, "output": 40, "cache": {"read": 0, "write": 0}},
                 "model": "mock-model", "context_window": 128000, "tool_name": "read",
                 "call_id": "c1", "usage": [{"id": "m1", "tokens": {"input": 1200, "output": 40},
                                             "model": "mock-model"}]},
}  # fmt: skip


def _ok(result: HookRun) -> None:
    assert result.returncode == 0, result.stderr
    if result.stdout.strip():
        assert isinstance(json.loads(result.stdout), dict)


@pytest.mark.parametrize(("cli", "event"), EVENTS, ids=[f"{c}-{e}" for c, e in EVENTS])
def test_bad_payloads_exit_zero(run_hook: Run, cli: str, event: str) -> None:
    for payload in BAD_PAYLOADS:
        _ok(run_hook(cli, event, payload))


@pytest.mark.parametrize(("cli", "event"), EVENTS, ids=[f"{c}-{e}" for c, e in EVENTS])
def test_store_down_exits_zero(run_hook: Run, workspace: Workspace, cli: str, event: str) -> None:
    payload = workspace.payload("claude/hook_user_prompt_submit.json", hook_event_name=event)
    payload |= OWN_FIELDS.get(cli, {})
    # Nothing listens there: every step fails fast and the hook still answers.
    _ok(run_hook(cli, event, payload, extra_env={"REDIS_URL": "redis://127.0.0.1:9/0"}))
