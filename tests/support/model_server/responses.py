"""OpenAI Responses as the real API streams ``POST /v1/responses``.

SSE ``response.created``, ``response.output_item.added``, then ``response.output_text.delta``
(a message) or ``response.function_call_arguments.delta`` / ``.done`` (a function call),
``response.output_item.done``, ``response.completed`` (with ``usage``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

from tests.support.model_server.core import Exchange

Event = tuple[str | None, dict[str, Any]]

CHUNK = 40
"""Characters per text delta."""


def _ident(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def _framed(
    body: dict[str, Any],
    started: dict[str, Any],
    middle: list[Event],
    done: dict[str, Any],
    usage: tuple[int, int],
) -> Iterator[Event]:
    base = {
        "id": _ident("resp"),
        "object": "response",
        "model": str(body.get("model") or "gpt-mock"),
        "status": "in_progress",
    }
    yield "response.created", {"type": "response.created", "response": {**base, "output": []}}
    yield (
        "response.output_item.added",
        {"type": "response.output_item.added", "output_index": 0, "item": started},
    )
    yield from middle
    yield (
        "response.output_item.done",
        {"type": "response.output_item.done", "output_index": 0, "item": done},
    )
    input_tokens, output_tokens = usage
    completed = {
        **base,
        "status": "completed",
        "output": [done],
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        },
    }
    yield "response.completed", {"type": "response.completed", "response": completed}


def answer_text(exchange: Exchange, body: dict[str, Any], text: str, input_tokens: int) -> None:
    """Stream one assistant message saying ``text``."""
    item_id = _ident("msg")
    started = {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": "in_progress",
        "content": [],
    }
    deltas: list[Event] = [
        (
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "delta": text[i : i + CHUNK],
            },
        )
        for i in range(0, len(text), CHUNK)
    ]
    done = {
        **started,
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    exchange.sse(_framed(body, started, deltas, done, (input_tokens, max(1, len(text) // 4))))


def answer_function_call(
    exchange: Exchange,
    body: dict[str, Any],
    name: str,
    arguments: dict[str, Any],
    input_tokens: int,
    namespace: str | None = None,
) -> None:
    """Stream one ``function_call`` item (``namespace`` apart from ``name``, as Codex expects)."""
    encoded = json.dumps(arguments)
    item = {
        "id": _ident("fc"),
        "type": "function_call",
        "call_id": _ident("call"),
        "name": name,
        **({"namespace": namespace} if namespace else {}),
        "arguments": "",
        "status": "in_progress",
    }
    common = {"item_id": item["id"], "output_index": 0}
    middle: list[Event] = [
        (
            "response.function_call_arguments.delta",
            {"type": "response.function_call_arguments.delta", **common, "delta": encoded},
        ),
        (
            "response.function_call_arguments.done",
            {"type": "response.function_call_arguments.done", **common, "arguments": encoded},
        ),
    ]
    done = {**item, "arguments": encoded, "status": "completed"}
    exchange.sse(_framed(body, item, middle, done, (input_tokens, 20)))
