"""``nika hook codex EVENT`` (hooks.json, stdin) and ``notify`` (argv JSON), real formats."""

from __future__ import annotations

import json
import shutil
import stat
import tomllib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis

from nika_tui.domain.memory import Layer
from nika_tui.errors import ConfigError
from nika_tui.services import redis_keys
from nika_tui.services.agent_install import install_agent_hooks
from nika_tui.services.agent_settings import (
    CODEX_EVENTS,
    agent_home,
    install_codex_hooks,
)
from nika_tui.services.wm_store import read_working_memory
from tests.hooks.conftest import DATA, TENANT, HookRun, Workspace, hook_log, ingested

Run = Callable[..., HookRun]


@pytest.fixture
def rollout(workspace: Workspace) -> Path:
    shutil.copy(DATA / "codex" / "rollout.jsonl", workspace.transcript)
    return workspace.transcript


def test_user_prompt_submit_enqueues_with_codex_envelope(
    run_hook: Run, workspace: Workspace, rollout: Path, redis_client: redis.Redis
) -> None:
    payload = workspace.payload("codex/hook_user_prompt_submit.json")
    result = run_hook("codex", "UserPromptSubmit", payload)
    assert (result.returncode, result.stdout) == (0, "")
    [req] = ingested(redis_client)
    assert req.text == "Add a Dockerfile for the API service."
    assert req.meta.agent_type == "codex"
    assert req.meta.session_id == "019ad1e2-7c3b-7a10-9f00-4b2c1d0e9f81"
    assert req.meta.project_id == "acme-api"
    assert req.meta.files == ("Dockerfile",)
    assert set(req.meta.tools) == {"shell", "apply_patch"}
    wm = read_working_memory(redis_client, TENANT)
    assert wm is not None and (wm.format, wm.tokens, wm.window) == ("codex", 21884, 272_000)


def test_notify_argument_captures_the_turn_and_finds_the_rollout(
    run_hook: Run, workspace: Workspace, redis_client: redis.Redis, tmp_path: Path
) -> None:
    codex_home = tmp_path / "codex-home"
    day = datetime.now(UTC)
    folder = codex_home / "sessions" / f"{day:%Y}" / f"{day:%m}" / f"{day:%d}"
    folder.mkdir(parents=True)
    thread = "019ad1e2-7c3b-7a10-9f00-4b2c1d0e9f81"
    shutil.copy(
        DATA / "codex" / "rollout.jsonl", folder / f"rollout-2026-11-30T12-00-00-{thread}.jsonl"
    )
    notify = json.loads((DATA / "codex" / "notify_agent_turn_complete.json").read_text())
    notify["cwd"] = str(workspace.project)
    result = run_hook(
        "codex", "notify", arg=json.dumps(notify), extra_env={"CODEX_HOME": str(codex_home)}
    )
    assert (result.returncode, result.stdout) == (0, "")
    [req] = ingested(redis_client)
    assert req.text == notify["last-assistant-message"]
    assert req.meta.session_id == thread and req.meta.files == ("Dockerfile",)
    wm = read_working_memory(redis_client, TENANT)
    assert wm is not None and wm.tokens == 21884


def test_notify_for_an_internal_thread_without_rollout_is_ignored(
    run_hook: Run, workspace: Workspace, redis_client: redis.Redis, tmp_path: Path
) -> None:
    # Codex notifies for its title-generation thread too: its own thread id, no rollout file.
    codex_home = tmp_path / "codex-home"
    (codex_home / "sessions").mkdir(parents=True)
    notify = json.loads((DATA / "codex" / "notify_agent_turn_complete.json").read_text())
    notify["thread-id"] = "019ad1e2-0000-7000-8000-000000000000"
    notify["last-assistant-message"] = "Fix retry backoff in the sync worker"
    result = run_hook(
        "codex", "notify", arg=json.dumps(notify), extra_env={"CODEX_HOME": str(codex_home)}
    )
    assert (result.returncode, result.stdout) == (0, "")
    assert ingested(redis_client) == []


def test_pre_compact_handoff_packet(
    run_hook: Run, workspace: Workspace, rollout: Path, redis_client: redis.Redis
) -> None:
    result = run_hook("codex", "PreCompact", workspace.payload("codex/hook_pre_compact.json"))
    assert result.returncode == 0
    assert ingested(redis_client) == []  # pending until Codex confirms the compaction
    post = workspace.payload("codex/hook_pre_compact.json", hook_event_name="PostCompact")
    assert run_hook("codex", "PostCompact", post).returncode == 0
    [req] = ingested(redis_client)
    assert req.layer is Layer.EPISODIC
    assert req.text.startswith("HANDOFF PACKET session 019ad1e2")
    assert "compaction trigger manual" in req.text
    assert "- Dockerfile: 1 edit, +5/-0" in req.text


def test_stop_uses_last_assistant_message_from_payload(
    run_hook: Run, workspace: Workspace, rollout: Path, redis_client: redis.Redis
) -> None:
    run_hook("codex", "Stop", workspace.payload("codex/hook_stop.json"))
    [req] = ingested(redis_client)
    assert req.text.startswith("Added a Dockerfile based on python:3.12-slim")


@pytest.mark.parametrize("arg", ["not json", "", '{"type": "agent-turn-complete"'])
def test_malformed_notify_exits_zero(
    run_hook: Run, redis_client: redis.Redis, arg: str, isolated_env: dict[str, str]
) -> None:
    result = run_hook("codex", "notify", arg=arg)
    assert (result.returncode, result.stdout) == (0, "")
    assert ingested(redis_client) == []
    assert hook_log(isolated_env)[-1]["outcome"] == "skipped"


def test_session_start_without_service_is_silent(
    run_hook: Run, workspace: Workspace, rollout: Path, redis_client: redis.Redis
) -> None:
    result = run_hook("codex", "SessionStart", workspace.payload("codex/hook_session_start.json"))
    assert (result.returncode, result.stdout) == (0, "")
    assert redis_client.xlen(redis_keys.hooks_fired(TENANT)) == 1


def test_install_merges_config_toml_and_hooks_json_idempotently(
    isolated_env: dict[str, str],
) -> None:
    home = agent_home(TENANT, "codex")
    home.mkdir(parents=True)
    shutil.copy(DATA / "codex" / "config_existing.toml", home / "config.toml")
    first = install_agent_hooks(TENANT, "codex")  # hooks, and the MCP server beside them
    snapshot = {p.name: p.read_text() for p in home.iterdir()}
    second = install_agent_hooks(TENANT, "codex")
    assert first.changed and second.changed == []
    assert {p.name: p.read_text() for p in home.iterdir()} == snapshot
    config = tomllib.loads(snapshot["config.toml"])
    assert config["notify"][-3:] == ["hook", "codex", "notify"]
    assert config["features"] == {"hooks": True, "web_search_request": True}
    assert config["mcp_servers"]["docs"]["command"] == "npx"
    assert config["mcp_servers"]["nika"]["args"] == ["mcp"]
    assert config["projects"]["/home/dev/acme-api"]["trust_level"] == "trusted"
    hooks = json.loads(snapshot["hooks.json"])["hooks"]
    assert sorted(hooks) == sorted(CODEX_EVENTS)
    for path in home.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_install_replaces_a_previous_notify_and_warns(isolated_env: dict[str, str]) -> None:
    home = agent_home(TENANT, "codex")
    home.mkdir(parents=True)
    (home / "config.toml").write_text('notify = [\n  "notify-send",\n  "done",\n]\nmodel = "o3"\n')
    report = install_codex_hooks(TENANT)
    assert report.warnings and "notify-send" in report.warnings[0]
    config = tomllib.loads((home / "config.toml").read_text())
    assert config["model"] == "o3" and config["notify"][-1] == "notify"


def test_invalid_config_toml_is_left_untouched(isolated_env: dict[str, str]) -> None:
    home = agent_home(TENANT, "codex")
    home.mkdir(parents=True)
    (home / "config.toml").write_text("model = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        install_codex_hooks(TENANT)
    assert (home / "config.toml").read_text() == "model = \n"
