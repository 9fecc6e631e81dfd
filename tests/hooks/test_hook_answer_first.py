"""A hook answers first and captures after; one agent's runs stay in order.

The agent waits for the answer only (Claude Code sends no prompt before UserPromptSubmit
returns), so captures and bookkeeping run after it (``HookContext.defer``). These tests call
:func:`run_hook` in this process with a ``reply`` callback — as the hook server's child does —
and look at the store at the moment the answer is handed over.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import redis

from nika_tui.hooks.dispatch import _take_order_lock, run_hook, wait_settled
from tests.hooks.conftest import TENANT, Workspace, hook_log, ingested


def _env() -> dict[str, str]:
    return {**os.environ, "NIKA_TENANT_ID": TENANT}


def test_stop_answers_before_the_turn_is_captured(
    workspace: Workspace, redis_client: redis.Redis, isolated_env: dict[str, str]
) -> None:
    at_answer: list[int] = []
    payload = workspace.payload("claude/hook_stop.json")

    def reply(output: str) -> None:
        at_answer.append(len(ingested(redis_client)))

    output = run_hook("claude", "Stop", json.dumps(payload), env=_env(), reply=reply)
    assert output == ""
    assert at_answer == [0]  # nothing stored yet when the agent got its answer
    assert len(ingested(redis_client)) == 1  # stored before the run ended
    [entry] = hook_log(isolated_env)
    assert entry["outcome"] == "ok" and entry["answer_ms"] <= entry["ms"]


def test_user_prompt_submit_answers_before_the_prompt_is_stored(
    workspace: Workspace, redis_client: redis.Redis, isolated_env: dict[str, str]
) -> None:
    prompt = "The staging database moved to the eu-west-3 region last week"
    payload = workspace.payload("claude/hook_user_prompt_submit.json", prompt=prompt)
    at_answer: list[list[str]] = []

    def reply(output: str) -> None:
        at_answer.append([r.text for r in ingested(redis_client)])

    run_hook("claude", "UserPromptSubmit", json.dumps(payload), env=_env(), reply=reply)
    assert at_answer == [[]]
    assert [r.text for r in ingested(redis_client)] == [prompt]


def test_a_failure_after_the_answer_keeps_the_answer_and_is_logged(
    workspace: Workspace, isolated_env: dict[str, str]
) -> None:
    payload = workspace.payload("claude/hook_session_start.json")
    replies: list[str] = []
    # Redis is unreachable: the answer ("" — nothing to inject) is still given, once.
    env = {**_env(), "REDIS_URL": "redis://127.0.0.1:9/0"}
    output = run_hook("claude", "SessionStart", json.dumps(payload), env=env, reply=replies.append)
    assert replies == [output]
    assert hook_log(isolated_env)[-1]["outcome"] in ("ok", "spooled")


def test_a_run_waits_for_the_previous_run_of_the_same_agent(
    workspace: Workspace, redis_client: redis.Redis, isolated_env: dict[str, str]
) -> None:
    # The previous run's deferred work still holds the lock: the next run waits for it, and
    # after the bounded wait goes on rather than block the agent.
    held = _take_order_lock(_env(), TENANT, "claude")
    assert held is not None
    try:
        assert not wait_settled(_env(), TENANT, "claude", timeout_s=0.2)
        payload = json.dumps(workspace.payload("claude/hook_stop.json"))
        run_hook("claude", "Stop", payload, env=_env())
    finally:
        os.close(held)
    entry = hook_log(isolated_env)[-1]
    assert entry["outcome"] == "ok"
    assert "order lock not taken: ran beside the previous run" in entry["notes"]
    assert wait_settled(_env(), TENANT, "claude", timeout_s=0.2)


def test_another_agent_of_the_tenant_does_not_wait(
    workspace: Workspace, redis_client: redis.Redis, isolated_env: dict[str, str]
) -> None:
    held = _take_order_lock(_env(), TENANT, "codex")
    assert held is not None
    try:
        run_hook(
            "claude", "Stop", json.dumps(workspace.payload("claude/hook_stop.json")), env=_env()
        )
    finally:
        os.close(held)
    assert hook_log(isolated_env)[-1]["outcome"] == "ok"
    assert not any("order lock" in n for n in hook_log(isolated_env)[-1]["notes"])


def test_the_order_lock_is_private(isolated_env: dict[str, str]) -> None:
    held = _take_order_lock(_env(), TENANT, "claude")
    assert held is not None
    os.close(held)
    run_dir = Path(isolated_env["NIKA_OS_DATA_DIR"]) / "run"
    assert run_dir.stat().st_mode & 0o777 == 0o700
    assert (run_dir / f"hook-order-{TENANT}-claude.lock").stat().st_mode & 0o777 == 0o600


def test_a_skipped_run_is_logged_before_it_answers(isolated_env: dict[str, str]) -> None:
    """A skipped run takes no order lock, so its answer is the only end a waiter can see."""
    at_answer: list[list[str]] = []

    def reply(output: str) -> None:
        at_answer.append([e["outcome"] for e in hook_log(isolated_env)])

    assert run_hook("claude", "SessionStart", "not json", env=_env(), reply=reply) == ""
    assert at_answer == [["skipped"]]


def test_a_run_is_logged_before_its_order_lock_is_released(
    workspace: Workspace, isolated_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`wait_settled` (the next run, a test) reads the log once the lock is free."""
    import nika_tui.hooks.dispatch as dispatch

    held_while_logging: list[bool] = []
    write_log = dispatch.write_log

    def spy(env: Mapping[str, str], entry: Mapping[str, Any]) -> None:
        held_while_logging.append(not wait_settled(env, TENANT, "claude", timeout_s=0))
        write_log(env, entry)

    monkeypatch.setattr(dispatch, "write_log", spy)
    payload = workspace.payload("claude/hook_stop.json")
    run_hook("claude", "Stop", json.dumps(payload), env=_env(), reply=lambda _out: None)
    assert held_while_logging == [True]
