"""The Gemini API as Gemini CLI calls it (``GOOGLE_GEMINI_BASE_URL``).

``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` answers Server-Sent Events, each
``data:`` line one ``GenerateContentResponse`` (``candidates[0].content.parts[]``, the last with
``finishReason`` and ``usageMetadata``); ``:generateContent`` answers one JSON response;
``:countTokens`` answers ``{"totalTokens": N}`` (the stand-in routes those).
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.model_server.core import Exchange

#: A text, or a dict that is one ``functionCall`` part's value.
Answer = str | dict[str, Any]


def from_schema(schema: Any) -> Any:
    """A minimal value that satisfies a JSON / OpenAPI schema (Gemini CLI's side questions)."""
    if not isinstance(schema, dict):
        return "ok"
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type") or "object").lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: from_schema(v) for k, v in props.items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return 1
    if kind == "boolean":
        return False
    return "user" if "speaker" in str(schema.get("description") or "").lower() else "ok"


def schema_answer(body: dict[str, Any]) -> str | None:
    """The JSON text a ``responseSchema`` request gets, or ``None`` when it asks for none."""
    config = body.get("generationConfig") or {}
    schema = config.get("responseSchema") or config.get("responseJsonSchema")
    return json.dumps(from_schema(schema), ensure_ascii=False) if schema else None


def response(answer: Answer, prompt_tokens: int, final: bool) -> dict[str, Any]:
    """One ``GenerateContentResponse``; the ``final`` one carries the finish reason and usage."""
    part = {"functionCall": answer} if isinstance(answer, dict) else {"text": answer}
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}, "index": 0}
    reply: dict[str, Any] = {"candidates": [candidate], "modelVersion": "mock-gemini"}
    if final:
        candidate["finishReason"] = "STOP"
        out = max(1, len(str(answer)) // 4)
        reply["usageMetadata"] = {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": out,
            "totalTokenCount": prompt_tokens + out,
        }
    return reply


def answer_stream(exchange: Exchange, answer: Answer, prompt_tokens: int) -> None:
    """Stream ``answer``: a text in two halves, a function call whole."""
    chunks: list[Answer] = [answer]
    if isinstance(answer, str):
        half = len(answer) // 2
        chunks = [answer[:half], answer[half:]]
    last = len(chunks) - 1
    exchange.sse(
        (None, response(chunk, prompt_tokens, final=i == last)) for i, chunk in enumerate(chunks)
    )
