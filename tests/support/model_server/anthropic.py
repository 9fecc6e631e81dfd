"""Anthropic Messages as the real API answers ``POST /v1/messages``.

``stream: true`` answers the SSE sequence ``message_start``, ``content_block_start``,
``content_block_delta`` (``text_delta``, or ``input_json_delta`` for a tool call),
``content_block_stop``, ``message_delta``, ``message_stop``; otherwise one JSON message.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

from tests.support.model_server.core import Exchange

Event = tuple[str | None, dict[str, Any]]

CHUNK = 40
"""Characters per text delta: a long answer arrives in several, as from the real API."""


def _message(
    body: dict[str, Any], content: list[dict[str, Any]], stop: str | None
) -> dict[str, Any]:
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": str(body.get("model") or "claude-mock"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
    }


def _usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
    }


def _events(
    message: dict[str, Any], block: dict[str, Any], deltas: list[dict[str, Any]], out: int
) -> Iterator[Event]:
    start = {**message, "content": [], "stop_reason": None}
    yield "message_start", {"type": "message_start", "message": start}
    yield (
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": block},
    )
    for delta in deltas:
        yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": out},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def answer_text(exchange: Exchange, body: dict[str, Any], text: str, input_tokens: int) -> None:
    """Answer ``text`` (streamed when the request asks for it)."""
    out = max(1, len(text) // 4)
    message = _message(body, [{"type": "text", "text": text}], "end_turn")
    message["usage"] = _usage(input_tokens, out)
    if not body.get("stream"):
        exchange.json(200, message)
        return
    message["usage"] = _usage(input_tokens, 1)
    deltas = [
        {"type": "text_delta", "text": text[i : i + CHUNK]} for i in range(0, len(text), CHUNK)
    ]
    exchange.sse(_events(message, {"type": "text", "text": ""}, deltas, out))


def answer_tool_use(
    exchange: Exchange,
    body: dict[str, Any],
    name: str,
    arguments: dict[str, Any],
    input_tokens: int,
) -> None:
    """Answer one ``tool_use`` block (``stop_reason: tool_use``), as a model calling a tool."""
    block = {
        "type": "tool_use",
        "id": f"toolu_{uuid.uuid4().hex[:24]}",
        "name": name,
        "input": arguments,
    }
    message = _message(body, [block], "tool_use")
    message["usage"] = _usage(input_tokens, 20)
    if not body.get("stream"):
        exchange.json(200, message)
        return
    delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
    exchange.sse(_events(message, {**block, "input": {}}, [delta], 20))
