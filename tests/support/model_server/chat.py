"""OpenAI Chat Completions as an ``@ai-sdk/openai-compatible`` client calls it.

``POST /v1/chat/completions`` with ``stream: true`` answers ``chat.completion.chunk`` events
(role, content deltas, a ``finish_reason`` chunk, a ``usage`` chunk) and ``data: [DONE]``;
without ``stream`` one ``chat.completion``. A function call is answered as the API answers one
(``tool_calls``, ``finish_reason`` ``tool_calls``).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

from tests.support.model_server.core import Exchange


def completion(
    body: dict[str, Any], text: str, usage: dict[str, int] | None = None
) -> dict[str, Any]:
    """One non-streamed ``chat.completion`` saying ``text``."""
    message = {"role": "assistant", "content": text}
    reply: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model") or "mock-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    if usage is not None:
        reply["usage"] = usage
    return reply


def answer(exchange: Exchange, body: dict[str, Any], text: str, prompt_tokens: int) -> None:
    """Answer ``text`` (streamed in two halves when the request asks for it)."""
    out = max(1, len(text) // 4)
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": out,
        "total_tokens": prompt_tokens + out,
    }
    reply = completion(body, text, usage)
    if not body.get("stream"):
        exchange.json(200, reply)
        return
    base = {k: reply[k] for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"

    def chunks() -> Iterator[tuple[str | None, Any]]:
        half = len(text) // 2
        deltas = [{"role": "assistant", "content": ""}, {"content": text[:half]}]
        for delta in [*deltas, {"content": text[half:]}]:
            yield None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        yield None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        yield None, {**base, "choices": [], "usage": usage}
        yield None, "[DONE]"

    exchange.sse(chunks())


def answer_tool_call(
    exchange: Exchange, body: dict[str, Any], name: str, args: dict[str, Any], prompt_tokens: int
) -> None:
    """Answer one function call (``finish_reason`` ``tool_calls``), streamed as the OpenAI API
    streams one: the call's id and name first, its arguments in a later delta."""
    call_id = f"call_{uuid.uuid4().hex[:12]}"
    arguments = json.dumps(args)
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 12,
             "total_tokens": prompt_tokens + 12}  # fmt: skip
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    reply = completion(body, "", usage)
    if not body.get("stream"):
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        reply["choices"][0].update(message=message, finish_reason="tool_calls")
        exchange.json(200, reply)
        return
    base = {k: reply[k] for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    head = {"index": 0, "id": call_id, "type": "function",
            "function": {"name": name, "arguments": ""}}  # fmt: skip
    deltas: list[dict[str, Any]] = [
        {"role": "assistant", "content": None, "tool_calls": [head]},
        {"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]},
    ]

    def chunks() -> Iterator[tuple[str | None, Any]]:
        for delta in deltas:
            yield None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        done = {"index": 0, "delta": {}, "finish_reason": "tool_calls"}
        yield None, {**base, "choices": [done]}
        yield None, {**base, "choices": [], "usage": usage}
        yield None, "[DONE]"

    exchange.sse(chunks())
