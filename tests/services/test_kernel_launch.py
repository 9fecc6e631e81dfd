"""What a kernel runs: argument list, working directory, session environment."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from nika_tui.domain.tenant import AgentCli, KernelConfig, TenantConfig
from nika_tui.errors import ConfigError, KernelError
from nika_tui.paths import tenant_data_dir
from nika_tui.services import kernel_launch
from nika_tui.settings import Settings


def config(agent_cli: AgentCli = AgentCli.SHELL, **kernel: Any) -> TenantConfig:
    return TenantConfig(
        tenant_id="acme", display_name="Acme", agent_cli=agent_cli, kernel=KernelConfig(**kernel)
    )


def test_session_environment_isolates_the_tenant(isolated_env: dict[str, str]) -> None:
    env = {**isolated_env, "REDIS_URL": "unix:///tmp/r.sock", "HOME": "/home/x"}
    cfg = config(env={"ACME": "1", "NIKA_TENANT_ID": "spoofed"})
    out = kernel_launch.session_environment(cfg, Settings.from_env(env).roots, env)
    home = tenant_data_dir("acme", env) / "agent-home"
    assert out["NIKA_TENANT_ID"] == "acme"  # ours win over kernel.env
    assert out["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] == "61"
    assert out["CLAUDE_CONFIG_DIR"] == str(home / "claude")
    assert out["CODEX_HOME"] == str(home / "codex")
    assert stat.S_IMODE((home / "codex").stat().st_mode) == 0o700
    assert out["ACME"] == "1"
    assert out["REDIS_URL"] == "unix:///tmp/r.sock"
    assert out["NIKA_OS_DATA_DIR"] == isolated_env["NIKA_OS_DATA_DIR"]
    assert out["NIKA_TMUX_SOCKET"] == isolated_env["NIKA_TMUX_SOCKET"]


def test_a_redis_password_never_reaches_the_tmux_command_line() -> None:
    out = kernel_launch.base_environment(config(), {"REDIS_URL": "redis://:s3cret@db:6379/0"})
    assert "REDIS_URL" not in out
    assert not any("s3cret" in value for value in out.values())


def test_an_invalid_variable_name_is_refused() -> None:
    with pytest.raises(ConfigError, match="invalid variable name 'BAD-NAME'"):
        kernel_launch.base_environment(config(env={"BAD-NAME": "x"}), {})


def test_workdir_must_exist(tmp_path: Path) -> None:
    assert kernel_launch.workdir_for(config(workdir=str(tmp_path)), {}) == tmp_path
    assert kernel_launch.workdir_for(config(), {"HOME": str(tmp_path)}) == tmp_path
    with pytest.raises(ConfigError, match="is not a directory"):
        kernel_launch.workdir_for(config(workdir=str(tmp_path / "missing")), {})


def test_command_is_the_configured_argument_list(tmp_path: Path) -> None:
    agent = tmp_path / "bin" / "agent"
    agent.parent.mkdir()
    agent.write_text("#!/bin/sh\n")
    agent.chmod(0o700)
    argv = ["bin/agent", "--flag", "; not shell"]
    cfg = config(workdir=str(tmp_path), command=argv)
    assert (
        kernel_launch.command_for(cfg, {"PATH": os.environ["PATH"]}) == argv
    )  # relative to workdir
    agent.chmod(0o600)
    with pytest.raises(KernelError, match="not found") as caught:
        kernel_launch.command_for(cfg, {"PATH": os.environ["PATH"]})
    assert "kernel.command" in caught.value.hint


def test_default_command_is_the_cli_binary_with_its_install_hint(tmp_path: Path) -> None:
    empty = str(tmp_path)
    with pytest.raises(KernelError) as caught:
        kernel_launch.command_for(config(agent_cli=AgentCli.GEMINI_CLI), {"PATH": empty})
    assert "'gemini' not found on PATH" in caught.value.message
    assert caught.value.hint == "npm install -g @google/gemini-cli"
    (tmp_path / "gemini").write_text("#!/bin/sh\n")
    (tmp_path / "gemini").chmod(0o700)
    assert kernel_launch.command_for(config(agent_cli=AgentCli.GEMINI_CLI), {"PATH": empty}) == [
        "gemini"
    ]


def test_an_empty_command_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"kernel\.command is empty"):
        kernel_launch.command_for(config(command=[]), {})
