"""A local Anthropic Messages API for the real ``claude -p`` (``ANTHROPIC_BASE_URL``), offline.

``POST /v1/messages`` answers ``answer to: {the last user text}`` — as the SSE sequence
``message_start``, ``content_block_start``, ``content_block_delta`` (``text_delta``),
``content_block_stop``, ``message_delta``, ``message_stop`` when ``stream`` is true, else one
JSON message; ``POST /v1/messages/count_tokens`` answers a count; every request is logged so a
test can read what reached the model (``model_requests()``). It is the agents' mock
(:mod:`tests.agents.mock_anthropic_openai`) with this reply.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.agents.mock_anthropic_openai import MockModelServer


def last_user_text(body: dict[str, Any]) -> str:
    """The last text block of the last user message that is not a system reminder."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        texts = [b.get("text", "") for b in blocks or [] if b.get("type") == "text"]
        texts = [t for t in texts if t and not t.lstrip().startswith("<system-reminder>")]
        if texts:
            return str(texts[-1]).strip()
    return ""


@contextmanager
def running_mock() -> Iterator[MockModelServer]:
    """The mock on 127.0.0.1 (any free port), shut down afterwards."""
    server = MockModelServer(
        reply=lambda body: f"answer to: {last_user_text(body)}", input_tokens=1000
    ).start()
    try:
        yield server
    finally:
        server.stop()
