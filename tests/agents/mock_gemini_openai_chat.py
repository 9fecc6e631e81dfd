"""A local model server for Gemini CLI and OpenCode: the Gemini API and OpenAI Chat Completions.

The real ``gemini`` and ``opencode`` binaries are pointed at it and run offline:

- Gemini CLI (``GOOGLE_GEMINI_BASE_URL``, ``GEMINI_API_KEY``):
  ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` answers Server-Sent Events, each
  ``data:`` line one ``GenerateContentResponse`` (``candidates[0].content.parts[].text``, the
  last with ``finishReason`` and ``usageMetadata``); ``:generateContent`` answers one JSON
  response (a ``responseSchema`` request gets a JSON object text); ``:countTokens`` answers
  ``{"totalTokens": N}``.
- OpenCode with an ``@ai-sdk/openai-compatible`` provider (``options.baseURL``):
  ``POST /v1/chat/completions`` with ``stream: true`` answers ``chat.completion.chunk`` events
  (role, content deltas, a ``finish_reason`` chunk, a ``usage`` chunk) and ``data: [DONE]``;
  without ``stream`` one ``chat.completion``. ``GET /v1/models`` lists one model.

The HTTP server, the request log and the SSE framing are :mod:`tests.support.model_server`'s,
each API's answers are built there too (``gemini``, ``chat``). Every request is logged (method,
path, headers without credentials, JSON body) so tests can assert what reached the model.
Answers come from ``reply`` (a function of the request text); the prompt token count reported is
settable, so a test can drive the fill the CLI records.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.support.model_server import chat, gemini
from tests.support.model_server.core import Exchange, ModelServer
from tests.support.model_server.core import Logged as _Logged


class Logged(_Logged):
    """One request the server received."""

    def text(self) -> str:
        """Everything the model reads in this request (system + conversation), as JSON text."""
        keys = ("systemInstruction", "contents", "messages")
        return json.dumps({k: self.body.get(k) for k in keys}, ensure_ascii=False)

    def system(self) -> str:
        """The system instruction's text (Gemini ``systemInstruction``; chat ``system`` roles)."""
        parts = (self.body.get("systemInstruction") or {}).get("parts") or []
        texts = [str(p.get("text") or "") for p in parts if isinstance(p, dict)]
        for msg in self.body.get("messages") or []:
            if isinstance(msg, dict) and msg.get("role") == "system":
                texts.append(json.dumps(msg.get("content"), ensure_ascii=False))
        return "\n".join(texts)

    def last_user(self) -> str:
        """The text of the last user turn."""
        turns = [c for c in self.body.get("contents") or [] if c.get("role") == "user"]
        turns += [m for m in self.body.get("messages") or [] if m.get("role") == "user"]
        if not turns:
            return ""
        last = turns[-1]
        if "parts" in last:
            return "\n".join(str(p.get("text") or "") for p in last["parts"] if isinstance(p, dict))
        return json.dumps(last.get("content"), ensure_ascii=False)

    @property
    def is_generation(self) -> bool:
        """True for a request that asks the model for an answer (not a token count)."""
        path = self.path.split("?", 1)[0]
        return path.lower().endswith("generatecontent") or path.endswith("/chat/completions")


def default_reply(entry: Logged) -> str:
    """A short answer; a compression request (its system prompt asks for a snapshot or a
    summary of the conversation) gets one."""
    head = entry.system()[:400].lower()
    if "state_snapshot" in head or "summar" in head or "<state_snapshot>" in entry.last_user():
        return "<state_snapshot>The user shared project facts. Nothing pending.</state_snapshot>"
    return "Noted. I have recorded that and I am ready for the next step of the task."


@dataclass
class MockModelServer(ModelServer):
    """The server's state: the request log, the reply function, the usage to report."""

    reply: Callable[[Logged], str | dict[str, Any]] = default_reply
    """The answer: text, or a dict that is one Gemini ``functionCall`` part's value (for Chat
    Completions, ``{"name", "args"}`` is one tool call)."""
    prompt_tokens: int = 1200
    usage: Callable[[Logged], int] | None = None
    """The prompt tokens to report for one request (else ``prompt_tokens``): lets a test make
    one answer overflow the window without every later one doing so too."""

    logged = Logged

    def generations(self) -> list[Logged]:
        """The requests that asked for an answer, oldest first."""
        with self._lock:
            return [r for r in self.requests if isinstance(r, Logged) and r.is_generation]

    def answer_get(self, exchange: Exchange, entry: _Logged) -> None:
        """``/models`` lists one model (OpenCode checks it), anything else is 404."""
        if entry.path.rstrip("/").endswith("/models"):
            exchange.json(
                200, {"object": "list", "data": [{"id": "mock-model", "object": "model"}]}
            )
        else:
            exchange.json(404, {"error": {"message": f"unknown path {entry.path}"}})

    def answer(self, exchange: Exchange, entry: _Logged) -> None:
        """Gemini (count, stream, one-shot) or Chat Completions, by path."""
        assert isinstance(entry, Logged)
        route = entry.route
        if route.endswith(":countTokens"):
            exchange.json(200, {"totalTokens": self.prompt_tokens})
        elif route.endswith(":streamGenerateContent"):
            gemini.answer_stream(exchange, self._gemini_answer(entry), self.prompt_tokens)
        elif route.endswith(":generateContent"):
            reply = gemini.response(self._gemini_answer(entry), self.prompt_tokens, final=True)
            exchange.json(200, reply)
        elif route.endswith("/chat/completions"):
            answer = self.reply(entry)
            prompt = self.usage(entry) if self.usage else self.prompt_tokens
            if isinstance(answer, dict) and set(answer) == {"name", "args"}:
                chat.answer_tool_call(exchange, entry.body, answer["name"], answer["args"], prompt)
                return
            text = answer if isinstance(answer, str) else json.dumps(answer)
            chat.answer(exchange, entry.body, text, prompt)
        else:
            exchange.json(404, {"error": {"message": f"unknown path {entry.path}"}})

    def _gemini_answer(self, entry: Logged) -> gemini.Answer:
        # Gemini CLI's own side questions (next speaker, loop check) ask for JSON.
        return gemini.schema_answer(entry.body) or self.reply(entry)
