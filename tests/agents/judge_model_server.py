"""A minimal model server for the judge's agent-CLI tier: Anthropic Messages and OpenAI
Responses, streamed as the real APIs stream them, on 127.0.0.1.

The real ``claude -p`` (``ANTHROPIC_BASE_URL``) and ``codex exec`` (a custom model provider)
talk to it. Its "model" answers the judge's batch prompt: for every pair of the JSON block, a
new fact containing ``moved`` is REPLACE, else KEEP. Any other request (a title, a quota
probe) gets the same kind of short text answer. Every request body is recorded, and the API
key header must be the one the test set (a request without it is refused with 401). It is the
agents' mock (:mod:`tests.agents.mock_anthropic_openai`) with this answer and a key.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.agents.mock_anthropic_openai import MockModelServer
from tests.support.model_server.core import Exchange, Logged

_PAIRS = re.compile(r"Pairs:\n(?=\[)")


def answer_for(prompt: str) -> str:
    """The stand-in model's reply to a prompt (a batch verdict array when it is one)."""
    found = _PAIRS.search(prompt)
    if not found:
        return "OK"
    try:
        pairs, _ = json.JSONDecoder().raw_decode(prompt, found.end())
    except ValueError:
        return "[]"
    return json.dumps(
        [
            {
                "id": p["id"],
                "verdict": "REPLACE" if "moved" in p["new"]["text"] else "KEEP",
                "reason": "stand-in model",
            }
            for p in pairs
        ]
    )


def _text_of(body: Any) -> str:
    """All strings a request carries (messages / input items, system included), joined."""
    if isinstance(body, str):
        return body
    if isinstance(body, dict):
        return "\n".join(_text_of(v) for v in body.values())
    if isinstance(body, list):
        return "\n".join(_text_of(v) for v in body)
    return ""


def _reply(body: dict[str, Any]) -> str:
    return answer_for(_text_of(body))


class JudgeModelServer(MockModelServer):
    """Serves ``POST /v1/messages`` (Anthropic) and ``POST /v1/responses`` (OpenAI)."""

    def __init__(self, api_key: str) -> None:
        super().__init__(api_key=api_key, reply=_reply, input_tokens=10)
        self.start()

    def answer_get(self, exchange: Exchange, entry: Logged) -> None:
        """Any ``GET`` (a model list, a probe) answers an empty list."""
        exchange.json(200, {"data": [], "object": "list"})

    def close(self) -> None:
        """Stop serving."""
        self.stop()
