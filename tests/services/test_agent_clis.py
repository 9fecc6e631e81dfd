"""Agent CLI detection against stand-in executables that print the real --version formats."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nika_tui.domain.tenant import AgentCli
from nika_tui.services.agent_clis import (
    AGENT_BINARIES,
    detect_agent_cli,
    detect_agent_clis,
    parse_version,
)


def fake_cli(bindir: Path, name: str, body: str) -> Path:
    path = bindir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def bindir(tmp_path: Path) -> Path:
    d = tmp_path / "bin"
    d.mkdir()
    return d


def test_detects_installed_clis_and_their_versions(bindir: Path) -> None:
    fake_cli(bindir, "claude", 'echo "1.0.51 (Claude Code)"')
    fake_cli(bindir, "codex", 'echo "codex-cli 0.20.0"')
    found = detect_agent_clis(path=str(bindir), parent_env={"SHELL": "/bin/sh"})
    assert list(found) == list(AgentCli)
    assert found[AgentCli.CLAUDE_CODE].version == "1.0.51"
    assert found[AgentCli.CODEX].version == "0.20.0"
    assert found[AgentCli.CODEX].path == str(bindir / "codex")
    assert not found[AgentCli.GEMINI_CLI].installed
    assert found[AgentCli.GEMINI_CLI].install_hint == "npm install -g @google/gemini-cli"
    assert not found[AgentCli.OPENCODE].installed


def test_shell_is_the_users_shell() -> None:
    info = detect_agent_cli(AgentCli.SHELL, path=os.defpath, parent_env={"SHELL": "sh"})
    assert info.installed and info.binary == "sh"


def test_a_cli_that_hangs_is_killed_and_reported(bindir: Path) -> None:
    # `exec` so the killed process group holds the pipe: the call must return, not wait 60 s.
    fake_cli(bindir, "gemini", "exec sleep 60")
    info = detect_agent_cli(AgentCli.GEMINI_CLI, path=str(bindir), timeout=0.3)
    assert info.installed and info.version is None
    assert "did not answer" in info.detail


def test_a_failing_cli_keeps_its_exit_code(bindir: Path) -> None:
    fake_cli(bindir, "opencode", 'echo "not logged in" >&2; exit 3')
    info = detect_agent_cli(AgentCli.OPENCODE, path=str(bindir))
    assert info.installed and info.version is None
    assert "exited with 3" in info.detail


@pytest.mark.parametrize(
    ("output", "version"),
    [
        ("1.0.51 (Claude Code)", "1.0.51"),
        ("codex-cli 0.20.0", "0.20.0"),
        ("0.1.12", "0.1.12"),
        ("opencode v0.3.2-beta.1", "0.3.2-beta.1"),
        ("no digits", None),
    ],
)
def test_parse_version(output: str, version: str | None) -> None:
    assert parse_version(output) == version


def test_binary_table_is_complete() -> None:
    assert set(AGENT_BINARIES) == set(AgentCli) - {AgentCli.SHELL}
