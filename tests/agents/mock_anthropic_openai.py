"""A local model server for the real agent CLIs: Anthropic Messages and OpenAI Responses.

The real ``claude`` and ``codex`` binaries are pointed at it (``ANTHROPIC_BASE_URL``; a Codex
``model_providers`` entry with ``wire_api = "responses"``) and run offline. It speaks each API's
streaming protocol as documented:

- ``POST /v1/messages`` (Anthropic Messages): ``stream: true`` answers with the SSE sequence
  ``message_start``, ``content_block_start``, ``content_block_delta`` (``text_delta``),
  ``content_block_stop``, ``message_delta``, ``message_stop``; otherwise one JSON message.
  ``POST /v1/messages/count_tokens`` answers ``{"input_tokens": N}``.
- ``POST /v1/responses`` (OpenAI Responses): SSE ``response.created``,
  ``response.output_item.added``, ``response.output_text.delta``, ``response.output_item.done``,
  ``response.completed`` (with ``usage``).
- ``GET /v1/models`` / ``GET /models``: an empty model list.

The HTTP server, the request log and the SSE framing are :mod:`tests.support.model_server`'s;
each API's events are built there too (``anthropic``, ``responses``). Every request is logged
(path, headers without credentials, JSON body) so tests can assert what reached the model.
Answers come from ``reply``, a function of the request body (tests set it); it returns a text,
or a :class:`ToolCall`: then the answer is one ``tool_use`` block (Anthropic,
``input_json_delta``, ``stop_reason: tool_use``) or one ``function_call`` item (Responses), as a
model asking the CLI to run a tool (a Codex MCP tool offered inside a ``namespace`` tool is
named by its qualified name, ``mcp__nika__memory_recall``, and answered with ``namespace`` and
``name`` apart, as Codex expects). :func:`tools_offered` and :func:`calls_made` read a request's
tools and the tool calls (with their results) already in its history, for either API; the usage
each answer reports (``input_tokens``) is settable, so a test can drive the context fill the CLI
sees.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.support.model_server import anthropic, responses
from tests.support.model_server.core import Exchange, ModelServer
from tests.support.model_server.core import Logged as _Logged


class Logged(_Logged):
    """One request the server received."""

    def text(self) -> str:
        """Everything the model would read in this request (system, messages, input) as text."""
        return json.dumps(
            {k: self.body.get(k) for k in ("system", "messages", "instructions", "input")},
            ensure_ascii=False,
        )


@dataclass(frozen=True)
class ToolCall:
    """An answer that calls one tool (``name`` exactly as the request's tools list spells it)."""

    name: str
    arguments: dict[str, Any]


Reply = str | ToolCall


def tools_offered(body: dict[str, Any]) -> list[str]:
    """The names of the tools the request offers the model (either API).

    A Responses ``namespace`` tool (Codex groups an MCP server's tools in one, ``mcp__nika``)
    contributes its members' qualified names, ``mcp__nika__memory_recall``: the name a
    :class:`ToolCall` uses, split back into ``namespace`` and ``name`` on the wire.
    """
    names: list[str] = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict) or "name" not in tool:
            continue
        if tool.get("type") == "namespace":
            members = [m["name"] for m in tool.get("tools") or [] if "name" in m]
            names += [f"{tool['name']}__{member}" for member in members]
        else:
            names.append(str(tool["name"]))
    return names


def _namespaced(body: dict[str, Any], qualified: str) -> tuple[str | None, str]:
    """(namespace, name) of a qualified tool name offered in a namespace, else (None, name)."""
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and tool.get("type") == "namespace":
            prefix = f"{tool['name']}__"
            members = {m.get("name") for m in tool.get("tools") or []}
            if qualified.startswith(prefix) and qualified[len(prefix) :] in members:
                return str(tool["name"]), qualified[len(prefix) :]
    return None, qualified


@dataclass(frozen=True)
class CallMade:
    """A tool call already in the request's history, and the result the CLI sent back."""

    name: str
    arguments: dict[str, Any]
    result: str | None


def calls_made(body: dict[str, Any]) -> list[CallMade]:
    """The tool calls in the history of an Anthropic or Responses request, oldest first."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    results: dict[str, str] = {}
    for msg in body.get("messages") or []:
        content = msg.get("content") if isinstance(msg, dict) else None
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                calls[block["id"]] = (block["name"], dict(block.get("input") or {}))
            elif block.get("type") == "tool_result":
                results[block["tool_use_id"]] = _flatten(block.get("content"))
    items = body.get("input")
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            try:
                args = json.loads(item.get("arguments") or "{}")
            except ValueError:
                args = {}
            namespace = item.get("namespace")
            name = f"{namespace}__{item['name']}" if namespace else item["name"]
            calls[item["call_id"]] = (name, args)
        elif item.get("type") == "function_call_output":
            results[item["call_id"]] = _flatten(item.get("output"))
    return [CallMade(name, args, results.get(cid)) for cid, (name, args) in calls.items()]


def _flatten(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_flatten(c) for c in content)
    if isinstance(content, dict):
        return str(content.get("text") or content.get("output") or _flatten(content.get("content")))
    return "" if content is None else json.dumps(content)


def default_reply(body: dict[str, Any]) -> str:
    """A short answer; a compaction request gets a summary (both CLIs ask for one)."""
    text = json.dumps(body.get("messages") or body.get("input") or "", ensure_ascii=False)
    lowered = text.lower()
    if "summary" in lowered and ("conversation" in lowered or "compact" in lowered):
        return "<summary>The user and the assistant discussed the project.</summary>"
    return "Noted. I have recorded that and I am ready for the next step of the task."


@dataclass
class MockModelServer(ModelServer):
    """The server's state: the request log, the reply function, the usage to report."""

    reply: Callable[[dict[str, Any]], Reply] = default_reply
    input_tokens: int = 1200

    logged = Logged

    def model_requests(self, path_suffix: str = "") -> list[Logged]:
        """Requests that asked the model for an answer (not token counts or model lists)."""
        asked = self.logged_where(("/messages", "/responses"))
        return [r for r in asked if isinstance(r, Logged) and r.route.endswith(path_suffix)]

    def answer(self, exchange: Exchange, entry: _Logged) -> None:
        """Anthropic Messages (and its token count) or OpenAI Responses, by path."""
        body, route = entry.body, entry.route
        if route.endswith("/messages/count_tokens"):
            exchange.json(200, {"input_tokens": self.input_tokens})
        elif route.endswith("/messages"):
            answer = self.reply(body)
            if isinstance(answer, ToolCall):
                anthropic.answer_tool_use(
                    exchange, body, answer.name, answer.arguments, self.input_tokens
                )
            else:
                anthropic.answer_text(exchange, body, answer, self.input_tokens)
        elif route.endswith("/responses"):
            answer = self.reply(body)
            if isinstance(answer, ToolCall):
                namespace, name = _namespaced(body, answer.name)
                responses.answer_function_call(
                    exchange, body, name, answer.arguments, self.input_tokens, namespace
                )
            else:
                responses.answer_text(exchange, body, answer, self.input_tokens)
        else:
            super().answer(exchange, entry)
