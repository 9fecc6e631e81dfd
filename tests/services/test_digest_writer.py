"""Who may write the LLM digest, and the agent-cli tier's one-prompt call.

The agent CLIs are the stand-in ``claude`` / ``codex`` executables of ``tests/support`` (first on
PATH, the real output formats, argv and stdin recorded); the real ``claude -p`` writing a digest
is ``tests/agents/test_digest_agent_cli.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from nika_tui.domain.tenant import (
    AgentCli,
    CompressConfig,
    DigestMode,
    JudgeConfig,
    JudgeKind,
    Privacy,
    TenantConfig,
)
from nika_tui.services.digest_writer import select_writer
from nika_tui.services.judges.agent_cli import AgentCliJudge, CliFlavor
from nika_tui.settings import Settings
from tests.support.agent_cli_standin import install_standin


@pytest.fixture
def cli_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for flavor in CliFlavor:
        install_standin(bin_dir, flavor.value)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("NIKA_STANDIN_RECORD", str(tmp_path / "record.json"))
    return bin_dir


def _tenant(**kw: Any) -> TenantConfig:
    return TenantConfig(
        tenant_id="acme", display_name="Acme", compress=CompressConfig(digest=DigestMode.LLM),
        judge=JudgeConfig(kind=JudgeKind.AGENT_CLI), **kw,
    )  # fmt: skip


def test_default_privacy_writes_the_shareable_digest_with_the_tenants_cli(
    cli_bin: Path,
) -> None:
    config = _tenant(privacy=Privacy.DEFAULT, agent_cli=AgentCli.CODEX)
    writer, why = select_writer(config, Settings.from_env().roots, os.environ, private=False)
    assert isinstance(writer, AgentCliJudge) and writer.flavor is CliFlavor.CODEX
    assert writer.executable == str(cli_bin / "codex") and why.startswith("agent-cli judge")
    private, reason = select_writer(config, Settings.from_env().roots, os.environ, private=True)
    assert private is None and "agent CLI sends to its provider" in reason


def test_without_the_cli_the_digest_stays_offline_and_says_why(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path)}
    config = _tenant(privacy=Privacy.DEFAULT, agent_cli=AgentCli.CLAUDE_CODE)
    writer, why = select_writer(config, Settings.from_env().roots, env, private=False)
    assert writer is None and "`claude` is not installed" in why and "offline digest" in why


@pytest.mark.parametrize("flavor", list(CliFlavor), ids=[f.value for f in CliFlavor])
def test_complete_sends_system_then_user_on_stdin_only(
    flavor: CliFlavor, cli_bin: Path, tmp_path: Path
) -> None:
    answer, problem = AgentCliJudge(flavor=flavor).complete(
        "SYSTEM: write the digest", "NODE shop (project, status in_progress)\n- [id-1] moved", 900
    )
    assert problem == "" and answer == "REPLACE\nthe staging host moved"
    record = json.loads((tmp_path / "record.json").read_text(encoding="utf-8"))
    assert record["stdin"] == (
        "SYSTEM: write the digest\n\nNODE shop (project, status in_progress)\n- [id-1] moved"
    )
    assert not any("NODE" in arg or "id-1" in arg for arg in record["argv"])
