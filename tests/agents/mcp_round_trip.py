"""The scripted model and the checks shared by the real-CLI MCP tests (Claude Code, Codex).

The model is the mock server, scripted by the tools each request offers (read from the request,
never assumed): while the nika tools are not offered yet it calls ``WaitForMcpServers`` (Claude
Code connects MCP servers in the background); then it calls the remember tool, then (once the
real memory service has indexed the fact) the recall tool, then answers in text.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

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

TENANT = "mcpcli"
FACT = "The billing database is backed up nightly at 02:30 UTC to bucket acme-db-backups."
QUERY = "when is the billing database backed up"
CLI_TIMEOUT_S = 150


def _tool(offered: list[str], suffix: str) -> str | None:
    return next((n for n in offered if n.endswith(suffix) and "nika" in n), None)


def indexed(svc: RunningService, text: str) -> bool:
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
                lambda: indexed(svc, "02:30 UTC"), timeout=90, interval=0.3, what="fact indexed"
            )
            return ToolCall(recall, {"query": QUERY})
        return "The billing database is backed up nightly at 02:30 UTC."

    return reply


def mcp_env(isolated_env: dict[str, str], redis_url: str) -> dict[str, str]:
    """The ``nika mcp`` server's environment: the tenant, Redis, the test's nika dirs."""
    env = {k: v for k, v in os.environ.items() if k.startswith(("HF_", "TRANS"))}
    env.update(isolated_env)
    env.update({"NIKA_TENANT_ID": TENANT, "REDIS_URL": redis_url, "PYTHONPATH": os.getcwd()})
    return env


def base_env(tmp_path: Path) -> dict[str, str]:
    """The CLI's environment: no provider keys or agent settings of the machine, a fresh HOME."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE_", "CODEX_", "NIKA_"))
    }
    env["HOME"] = str(home)
    return env


def run_cli(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the CLI headless; a timeout is returned (rc -9), so the assertion shows the log."""
    try:
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
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(argv, -9, str(exc.stdout), str(exc.stderr))


def assert_round_trip(svc: RunningService, mock: MockModelServer, path: str) -> None:
    """The fact is stored in the tenant, and both tool results reached the model."""
    assert indexed(svc, "02:30 UTC")  # stored in the tenant by the real service
    requests = mock.model_requests(path)
    final = [r for r in requests if any("memory_recall" in c.name for c in calls_made(r.body))]
    assert final, "no request carried the recall call back to the model"
    [recall] = [c for c in calls_made(final[-1].body) if c.name.endswith("memory_recall")]
    [remember] = [c for c in calls_made(final[-1].body) if c.name.endswith("memory_remember")]
    assert remember.result is not None and "queued for ingestion" in remember.result
    assert recall.result is not None and FACT in recall.result, recall.result


def summary(mock: MockModelServer) -> str:
    """One line per model request: tools offered (nika / Wait ones) and calls so far."""
    lines = []
    for r in mock.model_requests():
        offered = [n for n in tools_offered(r.body) if "nika" in n or n.startswith("Wait")]
        calls = [(c.name, (c.result or "")[:80]) for c in calls_made(r.body)]
        lines.append(f"{r.path} tools={len(tools_offered(r.body))} {offered} calls={calls}")
    return "\n".join(lines)
