"""The real Claude Code and Codex binaries call nika's MCP tools through ``nika mcp``.

The model is the mock server, scripted by the tools each request offers (read from the request,
never assumed): while the nika tools are not offered yet it calls ``WaitForMcpServers`` (Claude
Code connects MCP servers in the background); then it calls the remember tool, then (once the
real memory service has indexed the fact) the recall tool, then answers in text. Asserted: the
fact is stored in the tenant by the real service, and the recall result that the CLI sent back
to the model (the next request's history) contains it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nika_tui.domain.requests import RecallQuery
from nika_tui.errors import ServiceNotRunning
from tests.agents.mock_anthropic_openai import (
    MockModelServer,
    Reply,
    ToolCall,
    calls_made,
    default_reply,
    tools_offered,
)
from tests.helpers import retry_until
from tests.plugins.memory import RunningService

pytestmark = [pytest.mark.agents, pytest.mark.embedder, pytest.mark.slow]

TENANT = "mcpcli"
FACT = "The billing database is backed up nightly at 02:30 UTC to bucket acme-db-backups."
QUERY = "when is the billing database backed up"
CLI_TIMEOUT_S = 150


def _tool(offered: list[str], suffix: str) -> str | None:
    return next((n for n in offered if n.endswith(suffix) and "nika" in n), None)


def _indexed(svc: RunningService, text: str) -> bool:
    """True once a recall of QUERY in the tenant returns a memory containing ``text``."""
    try:
        result = svc.client.recall(RecallQuery(tenant_id=TENANT, query=QUERY, limit=10))
    except ServiceNotRunning:
        return False  # its heartbeat lags while it embeds on a busy machine: ask again
    return any(text in h.record.text for h in result.hits)


def scripted(svc: RunningService) -> Callable[[dict[str, Any]], Reply]:
    """Wait for the MCP servers, remember FACT, recall it, then answer in text."""

    def reply(body: dict[str, Any]) -> Reply:
        offered = tools_offered(body)
        if not offered:
            return default_reply(body)  # a side request of the CLI (title, topic, ...)
        done = [c.name for c in calls_made(body)]
        remember, recall = _tool(offered, "memory_remember"), _tool(offered, "memory_recall")
        if remember is None or recall is None:
            if "WaitForMcpServers" in offered and done.count("WaitForMcpServers") < 3:
                return ToolCall("WaitForMcpServers", {"servers": ["nika"]})
            return "The nika tools were not offered."
        if remember not in done:
            return ToolCall(remember, {"text": FACT, "project_id": "acme-billing"})
        if recall not in done:
            # The remember tool only queues: recall once the real service has indexed it.
            retry_until(
                lambda: _indexed(svc, "02:30 UTC"), timeout=90, interval=0.3, what="fact indexed"
            )
            return ToolCall(recall, {"query": QUERY})
        return "The billing database is backed up nightly at 02:30 UTC."

    return reply


def _mcp_env(isolated_env: dict[str, str], redis_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.startswith(("HF_", "TRANS"))}
    env.update(isolated_env)
    env.update({"NIKA_TENANT_ID": TENANT, "REDIS_URL": redis_url, "PYTHONPATH": os.getcwd()})
    return env


def _base_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE_", "CODEX_", "NIKA_"))
    }
    env["HOME"] = str(home)
    return env


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    try:
        return _run1(argv, cwd, env)
    except subprocess.TimeoutExpired as exc:
        # Returned, not raised: the assertion then shows what the model was sent (_summary).
        return subprocess.CompletedProcess(argv, -9, str(exc.stdout), str(exc.stderr))


def _run1(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )


def _assert_round_trip(svc: RunningService, mock: MockModelServer, path: str) -> None:
    assert _indexed(svc, "02:30 UTC")  # stored in the tenant by the real service
    requests = mock.model_requests(path)
    final = [r for r in requests if any("memory_recall" in c.name for c in calls_made(r.body))]
    assert final, "no request carried the recall call back to the model"
    [recall] = [c for c in calls_made(final[-1].body) if c.name.endswith("memory_recall")]
    [remember] = [c for c in calls_made(final[-1].body) if c.name.endswith("memory_remember")]
    assert remember.result is not None and "queued for ingestion" in remember.result
    assert recall.result is not None and FACT in recall.result, recall.result


def _summary(mock: MockModelServer) -> str:
    """One line per model request: tools offered (nika / Wait ones) and calls so far."""
    lines = []
    for r in mock.model_requests():
        offered = [n for n in tools_offered(r.body) if "nika" in n or n.startswith("Wait")]
        calls = [(c.name, (c.result or "")[:80]) for c in calls_made(r.body)]
        lines.append(f"{r.path} tools={len(tools_offered(r.body))} {offered} calls={calls}")
    return "\n".join(lines)


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
        "env": _mcp_env(isolated_env, redis_url),
    }
    config.write_text(json.dumps({"mcpServers": {"nika": server}}))
    env = {
        **_base_env(tmp_path),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "ANTHROPIC_BASE_URL": mock_model.url,
        "ANTHROPIC_API_KEY": "sk-ant-test-not-a-secret",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    run = _run(
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
    assert run.returncode == 0, f"{run.stdout}{run.stderr}\n{_summary(mock_model)}"
    offered = {n for r in mock_model.model_requests("/messages") for n in tools_offered(r.body)}
    assert {"mcp__nika__memory_remember", "mcp__nika__memory_recall"} <= offered, sorted(offered)
    _assert_round_trip(running_service, mock_model, "/messages")
    # Whether the first request already offers the nika tools is a race (Claude Code connects
    # MCP servers in the background); both ways are scripted, neither is asserted.
    assert "02:30 UTC" in run.stdout
