"""A local stand-in for an OpenAI-compatible chat endpoint that answers batch judge prompts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.support.model_server import chat
from tests.support.model_server.core import Exchange, Logged, ModelServer


@dataclass
class BatchChatServer(ModelServer):
    """Speaks ``POST /v1/chat/completions``; answers a batch prompt with a JSON array.

    Its "model" reads each pair: a new fact containing ``moved`` is REPLACE, else KEEP; mode
    ``drop`` omits the last pair, ``garbage`` answers prose. ``GET /v1/models`` lists one
    model, or answers 401 when ``key`` is set and the request's bearer token differs.
    """

    key: str | None = None
    mode: str = "ok"

    def __post_init__(self) -> None:
        self.start()

    @property
    def url(self) -> str:
        """The API base, ``http://127.0.0.1:PORT/v1``."""
        return f"{super().url}/v1"

    def batches(self) -> list[dict[str, Any]]:
        """The chat requests' bodies, oldest first."""
        return [r.body for r in self.logged_where(("/chat/completions",))]

    def close(self) -> None:
        """Stop serving."""
        self.stop()

    def answer_get(self, exchange: Exchange, entry: Logged) -> None:
        """The model list, only for the right bearer token when ``key`` is set."""
        bearer = exchange.headers.get("Authorization")
        if self.key is None or bearer == f"Bearer {self.key}":
            exchange.json(
                200, {"object": "list", "data": [{"id": "small-judge", "object": "model"}]}
            )
        else:
            exchange.json(401, {"error": {"message": "Incorrect API key provided", "code": 401}})

    def answer(self, exchange: Exchange, entry: Logged) -> None:
        """The verdicts of the batch in the last user message (after its first line)."""
        pairs = json.loads(entry.body["messages"][-1]["content"].split("\n", 1)[1])
        verdicts = [
            {
                "id": p["id"],
                "verdict": "REPLACE" if "moved" in p["new"]["text"] else "KEEP",
                "reason": "stand-in",
            }
            for p in pairs
        ]
        if self.mode == "drop":
            verdicts = verdicts[:-1]
        content = "no idea" if self.mode == "garbage" else json.dumps(verdicts)
        exchange.json(200, chat.completion(entry.body, content))
