"""The real Claude Code binary calls nika's MCP tools through ``nika mcp``.

The model is scripted by :mod:`tests.agents.mcp_round_trip`: wait for the MCP servers, remember
a fact, recall it, answer. Asserted: the fact is stored in the tenant by the real service, and
the recall result that the CLI sent back to the model (the next request's history) contains it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agents.mcp_round_trip import (
    TENANT,
    assert_round_trip,
    base_env,
    mcp_env,
    run_cli,
    scripted,
    summary,
)
from tests.agents.mock_anthropic_openai import MockModelServer, tools_offered
from tests.plugins.memory import RunningService

pytestmark = [pytest.mark.agents, pytest.mark.embedder, pytest.mark.slow]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "acme-billing"
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def test_claude_code_remembers_and_recalls_through_nika_mcp(
    claude_bin: Path,
    mock_model: MockModelServer,
    running_service: RunningService,
    make_tenant: Any,
    isolated_env: dict[str, str],
    redis_url: str,
    project: Path,
    tmp_path: Path,
) -> None:
    make_tenant(TENANT)
    mock_model.reply = scripted(running_service)
    config = tmp_path / "mcp.json"
    server = {
        "command": sys.executable,
        "args": ["-m", "nika_tui", "mcp"],
        "env": mcp_env(isolated_env, redis_url),
    }
    config.write_text(json.dumps({"mcpServers": {"nika": server}}))
    env = {
        **base_env(tmp_path),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "ANTHROPIC_BASE_URL": mock_model.url,
        "ANTHROPIC_API_KEY": "sk-ant-test-not-a-secret",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    run = run_cli(
        [
            str(claude_bin),
            "-p",
            "Remember when the billing database is backed up, then check it is recalled.",
            "--mcp-config",
            str(config),
            "--strict-mcp-config",
            "--allowedTools=WaitForMcpServers,mcp__nika__memory_remember,mcp__nika__memory_recall",
        ],
        project,
        env,
    )
    assert run.returncode == 0, f"{run.stdout}{run.stderr}\n{summary(mock_model)}"
    offered = {n for r in mock_model.model_requests("/messages") for n in tools_offered(r.body)}
    assert {"mcp__nika__memory_remember", "mcp__nika__memory_recall"} <= offered, sorted(offered)
    assert_round_trip(running_service, mock_model, "/messages")
    # Whether the first request already offers the nika tools is a race (Claude Code connects
    # MCP servers in the background); both ways are scripted, neither is asserted.
    assert "02:30 UTC" in run.stdout
