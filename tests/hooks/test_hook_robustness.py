"""A hook never blocks or breaks the agent: whatever the payload or the store's state, every
event of both CLIs exits 0 and prints nothing or one valid JSON object."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from nika_tui.hooks import claude, codex
from tests.hooks.conftest import HookRun, Workspace

Run = Callable[..., HookRun]
pytestmark = pytest.mark.slow  # one process per event and payload
EVENTS = [("claude", e) for e in claude.EVENTS] + [("codex", e) for e in codex.EVENTS]
BAD_PAYLOADS: list[Any] = [
    "not json",
    {"session_id": 42, "transcript_path": ["x"], "cwd": None, "prompt": {"a": 1}},
    {"session_id": "s", "transcript_path": "/nonexistent/t.jsonl", "source": "compact"},
]


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
    # Nothing listens there: every step fails fast and the hook still answers.
    _ok(run_hook(cli, event, payload, extra_env={"REDIS_URL": "redis://127.0.0.1:9/0"}))
