"""The real Gemini CLI (``gemini -p``) calls nika's MCP tools in a home nika's installer prepared.

No MCP config is written by the test: ``install_agent_hooks`` (what ``nika kernel spawn`` runs
for each of a tenant's CLIs) registers ``nika mcp`` in the tenant's
``GEMINI_CLI_HOME/.gemini/settings.json`` (trusted: no confirmation per call). The model is the
Gemini API mock (:mod:`tests.agents.mock_gemini_openai_chat`), scripted by
:mod:`tests.agents.mcp_round_trip` as for Claude Code and Codex, read from Gemini's wire format:
the tools a request offers (``tools[].functionDeclarations``) and the calls already in its
history (``functionCall`` parts, answered by ``functionResponse`` parts).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nika_tui.services.agent_install import install_agent_hooks
from nika_tui.services.gemini_settings import gemini_home
from tests.agents.mcp_round_trip import (
    ANSWER,
    assert_full_round_trip,
    prepare_tenant,
    run_cli,
    scripted,
)
from tests.agents.mock_anthropic_openai import CallMade, ToolCall
from tests.agents.mock_gemini_openai_chat import Logged, MockModelServer, default_reply
from tests.plugins.memory import RunningService

pytestmark = [pytest.mark.agents, pytest.mark.embedder, pytest.mark.slow]

TENANT = "mcpgemini"


def gemini_tools(body: dict[str, Any]) -> list[str]:
    """The function names a Gemini API request offers."""
    return [
        str(decl["name"])
        for tool in body.get("tools") or []
        for decl in tool.get("functionDeclarations") or []
        if "name" in decl
    ]


def _text(response: Any) -> str:
    """A ``functionResponse.response`` as the text the model reads."""
    if isinstance(response, dict):
        for key in ("output", "error"):
            if isinstance(response.get(key), str):
                return str(response[key])
        content = response.get("content")
        if isinstance(content, list):
            return "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return json.dumps(response, ensure_ascii=False)


def gemini_calls(body: dict[str, Any]) -> list[CallMade]:
    """The function calls in a Gemini API request's history with their responses, in order."""
    calls: list[tuple[str, dict[str, Any]]] = []
    results: list[str] = []
    for turn in body.get("contents") or []:
        for part in turn.get("parts") or []:
            if "functionCall" in part:
                call = part["functionCall"]
                calls.append((str(call.get("name")), dict(call.get("args") or {})))
            elif "functionResponse" in part:
                results.append(_text(part["functionResponse"].get("response")))
    return [
        CallMade(name, args, results[i] if i < len(results) else None)
        for i, (name, args) in enumerate(calls)
    ]


def _main(entry: Logged) -> bool:
    return "streamGenerateContent" in entry.path and bool(gemini_tools(entry.body))


def test_gemini_cli_uses_the_nika_tools_registered_by_the_installer(
    gemini_bin: Path,
    gemini_chat_model: MockModelServer,
    running_service: RunningService,
    make_tenant: Callable[..., object],
    redis_url: str,
    tmp_path: Path,
) -> None:
    make_tenant(TENANT)
    prepare_tenant(TENANT)
    project = tmp_path / "acme-shop"  # the hooks capture the prompt in this project
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    # What a person's API-key login leaves in the settings (the installer keeps it).
    settings = gemini_home(TENANT) / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, mode=0o700)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    install_agent_hooks(TENANT, "gemini-cli", workdir=project)

    script = scripted(running_service, TENANT, gemini_tools, gemini_calls)

    def reply(entry: Logged) -> str | dict[str, Any]:
        if not _main(entry):
            return default_reply(entry)
        answer = script(entry.body)
        if isinstance(answer, ToolCall):
            return {"name": answer.name, "args": answer.arguments}
        return answer

    gemini_chat_model.reply = reply
    env = {
        **os.environ,  # the kernel's: NIKA_OS_* dirs of the test, REDIS_URL
        "NIKA_TENANT_ID": TENANT,
        "REDIS_URL": redis_url,
        "GEMINI_CLI_HOME": str(gemini_home(TENANT)),
        "GOOGLE_GEMINI_BASE_URL": gemini_chat_model.url,
        "GEMINI_API_KEY": "test-key-not-a-secret",
        "NO_COLOR": "1",
    }
    prompt = "Keep the team's memory of the billing project up to date."
    run = run_cli([str(gemini_bin), "-p", prompt], project, env)

    bodies = [r.body for r in gemini_chat_model.generations() if _main(r)]
    log = [[(c.name, (c.result or "")[:120]) for c in gemini_calls(b)] for b in bodies[-1:]]
    assert run.returncode == 0, f"{run.stdout}{run.stderr}\n{log}"
    assert_full_round_trip(running_service, bodies, TENANT, gemini_tools, gemini_calls)
    assert ANSWER in run.stdout
