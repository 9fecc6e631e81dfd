"""The real Codex (``codex exec``) calls nika's MCP tools through ``nika mcp``.

What Codex 0.171 needs, found by running it against the mock (docs/mcp.md):

- ``required = true`` on the server: ``codex exec`` does not wait for a server that is still
  starting (``nika mcp`` takes 1–8 s to answer ``initialize`` on a busy machine), its first
  request then offers none of its tools; a required server is waited for (up to
  ``startup_timeout_sec``) and its failure stops the run.
- an approval per tool (``[mcp_servers.nika.tools.<tool>] approval_mode = "approve"``):
  ``codex exec`` runs with ``approval: never``, and an MCP call needing approval fails
  ("MCP tool call requires approval, but approval policy is never") without reaching the server.
- the tools reach the model in one Responses ``namespace`` tool, ``mcp__nika``, whose members
  are the raw tool names; the model's ``function_call`` names the member and the namespace.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from tests.agents.conftest import codex_provider_config
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

TOOLS = ("memory_remember", "memory_recall")


def codex_config(mock: MockModelServer, server_env: dict[str, str]) -> str:
    """``config.toml``: the mock provider and ``nika mcp`` as a required, pre-approved server."""
    doc = tomlkit.parse(codex_provider_config(mock))
    server = tomlkit.table()
    server["command"] = sys.executable
    server["args"] = ["-m", "nika_tui", "mcp"]
    server["env"] = server_env
    server["required"] = True
    server["startup_timeout_sec"] = 120  # a cold CI machine imports slowly
    server["tools"] = {tool: {"approval_mode": "approve"} for tool in TOOLS}
    doc["mcp_servers"] = {"nika": server}
    return tomlkit.dumps(doc)


def test_codex_remembers_and_recalls_through_nika_mcp(
    codex_bin: Path,
    mock_model: MockModelServer,
    running_service: RunningService,
    make_tenant: Any,
    isolated_env: dict[str, str],
    redis_url: str,
    tmp_path: Path,
) -> None:
    make_tenant(TENANT)
    mock_model.reply = scripted(running_service)
    project = tmp_path / "acme-billing"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    home = tmp_path / "codex-home"
    home.mkdir(mode=0o700)
    (home / "config.toml").write_text(codex_config(mock_model, mcp_env(isolated_env, redis_url)))
    env = {**base_env(tmp_path), "CODEX_HOME": str(home), "MOCK_API_KEY": "not-a-secret"}
    prompt = "Remember when the billing database is backed up, then check it is recalled."
    # --strict-config: a key this Codex does not know fails the run instead of being ignored.
    run = run_cli([str(codex_bin), "exec", "--strict-config", prompt], project, env)

    assert run.returncode == 0, f"{run.stdout}{run.stderr}\n{summary(mock_model)}"
    first = mock_model.model_requests("/responses")[0]
    # Offered from the first request on: the run waited for the required server.
    assert {f"mcp__nika__{tool}" for tool in TOOLS} <= set(tools_offered(first.body))
    assert_round_trip(running_service, mock_model, "/responses")
    assert "02:30 UTC" in run.stdout
