"""The real OpenCode (``opencode run``) calls nika's MCP tools in a home nika's installer prepared.

The tenant's config dir holds what a person wrote (an ``opencode.json`` naming the mock
provider, the ``opencode`` fixture); ``install_agent_hooks`` (what ``nika kernel spawn`` runs
for each of a tenant's CLIs) merges ``mcp.nika`` into that file. The model is the Chat
Completions mock (:mod:`tests.agents.mock_gemini_openai_chat`), scripted by
:mod:`tests.agents.mcp_round_trip` as for the other CLIs, read from Chat Completions' wire
format: ``tools[].function.name`` offered, assistant ``tool_calls`` answered by ``tool``
messages.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from nika_tui.services.agent_install import install_agent_hooks
from tests.agents.mcp_round_trip import (
    ANSWER,
    assert_full_round_trip,
    prepare_tenant,
    scripted,
)
from tests.agents.mock_anthropic_openai import CallMade, ToolCall
from tests.agents.mock_gemini_openai_chat import Logged, default_reply
from tests.agents.opencode_home import TENANT, OpenCode
from tests.plugins.memory import RunningService

pytestmark = [pytest.mark.agents, pytest.mark.embedder, pytest.mark.slow]


def chat_tools(body: dict[str, Any]) -> list[str]:
    """The function names a Chat Completions request offers."""
    return [
        str(tool["function"]["name"])
        for tool in body.get("tools") or []
        if isinstance(tool, dict) and isinstance(tool.get("function"), dict)
    ]


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def chat_calls(body: dict[str, Any]) -> list[CallMade]:
    """The tool calls in a Chat Completions request's history with their results, in order."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    results: dict[str, str] = {}
    for msg in body.get("messages") or []:
        for call in msg.get("tool_calls") or []:
            fn = call.get("function") or {}
            calls[call["id"]] = (str(fn.get("name")), json.loads(fn.get("arguments") or "{}"))
        if msg.get("role") == "tool":
            results[str(msg.get("tool_call_id"))] = _text(msg.get("content"))
    return [CallMade(name, args, results.get(cid)) for cid, (name, args) in calls.items()]


def _main(entry: Logged) -> bool:
    return entry.path.endswith("/chat/completions") and bool(chat_tools(entry.body))


def test_opencode_uses_the_nika_tools_registered_by_the_installer(
    opencode: OpenCode, running_service: RunningService
) -> None:
    prepare_tenant(TENANT)
    install_agent_hooks(TENANT, "opencode")  # beside the person's provider in opencode.json
    script = scripted(running_service, TENANT, chat_tools, chat_calls)

    def reply(entry: Logged) -> str | dict[str, Any]:
        if not _main(entry):
            return default_reply(entry)  # the title generator
        answer = script(entry.body)
        if isinstance(answer, ToolCall):
            return {"name": answer.name, "args": answer.arguments}
        return answer

    opencode.server.reply = reply
    run = opencode.run("Keep the team's memory of the billing project up to date.")

    bodies = [r.body for r in opencode.server.generations() if _main(r)]
    assert bodies, run.stderr[-2000:]
    assert_full_round_trip(running_service, bodies, TENANT, chat_tools, chat_calls)
    assert ANSWER in run.stdout
