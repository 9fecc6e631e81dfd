"""A hook that cannot reach Redis spools its write (0600) and says so; the next run replays it."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from nika_tui.services.hook_spool import pending, spool_dir
from tests.hooks.conftest import TENANT, HookRun, Workspace, hook_log, ingested

Run = Callable[..., HookRun]
DOWN = {"REDIS_URL": "unix:///nonexistent/nika-test/redis.sock"}


def _prompt(workspace: Workspace, text: str) -> dict[str, Any]:
    return workspace.payload("claude/hook_user_prompt_submit.json", prompt=text)


def test_redis_down_spools_then_the_next_hook_run_replays(
    run_hook: Run,
    workspace: Workspace,
    redis_client: redis.Redis,
    isolated_env: dict[str, str],
    make_tenant: Callable[..., Any],
) -> None:
    make_tenant(TENANT)
    first = "The billing worker retries failed invoices three times before paging."
    down = run_hook("claude", "UserPromptSubmit", _prompt(workspace, first), extra_env=DOWN)
    assert down.returncode == 0
    assert hook_log(isolated_env)[-1]["outcome"] == "spooled"
    [path] = pending(TENANT)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(spool_dir(TENANT).stat().st_mode) == 0o700
    assert first in path.read_text()
    assert ingested(redis_client) == []

    second = "The billing worker now pages after two failed invoice retries instead."
    run_hook("claude", "UserPromptSubmit", _prompt(workspace, second))
    assert hook_log(isolated_env)[-1]["outcome"] == "ok"
    texts = [req.text for req in ingested(redis_client)]
    assert any(first in t for t in texts) and any(second in t for t in texts)
    assert pending(TENANT) == []


def test_up_replays_every_spool(
    run_hook: Run,
    workspace: Workspace,
    redis_client: redis.Redis,
    make_tenant: Callable[..., Any],
) -> None:
    from nika_tui.services.hook_spool import replay_all
    from nika_tui.services.memory_client import MemoryClient

    make_tenant(TENANT)
    text = "The nightly export job writes parquet files to the analytics bucket."
    run_hook("claude", "UserPromptSubmit", _prompt(workspace, text), extra_env=DOWN)
    assert replay_all(MemoryClient(redis_client)) == {TENANT: 1}
    assert [req.text for req in ingested(redis_client)] == [text]


def test_an_unknown_tenant_is_not_spooled(
    run_hook: Run, workspace: Workspace, isolated_env: dict[str, str]
) -> None:
    run_hook(
        "claude",
        "UserPromptSubmit",
        _prompt(workspace, "Some prompt that is long enough to keep."),
        extra_env=DOWN,
    )
    assert not spool_dir(TENANT).exists()
    assert hook_log(isolated_env)[-1]["outcome"] != "spooled"


def test_a_hook_for_an_unknown_tenant_creates_no_tenant_dir(
    run_hook: Run, workspace: Workspace, isolated_env: dict[str, str]
) -> None:
    run_hook(
        "claude",
        "UserPromptSubmit",
        _prompt(workspace, "A prompt long enough to be kept as a memory."),
        tenant="ghost",
    )
    assert not (Path(isolated_env["NIKA_OS_DATA_DIR"]) / "tenants" / "ghost").exists()
