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

Every request is logged (method, path, headers without credentials, JSON body) so tests can
assert what reached the model. Answers come from ``reply`` (a function of the request text);
the prompt token count reported is settable, so a test can drive the fill the CLI records.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_SECRET_HEADERS = frozenset({"authorization", "x-api-key", "x-goog-api-key"})


@dataclass
class Logged:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

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


def _from_schema(schema: Any) -> Any:
    """A minimal value that satisfies a JSON / OpenAPI schema (Gemini CLI's side questions)."""
    if not isinstance(schema, dict):
        return "ok"
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type") or "object").lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: _from_schema(v) for k, v in props.items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return 1
    if kind == "boolean":
        return False
    return "user" if "speaker" in str(schema.get("description") or "").lower() else "ok"


@dataclass
class MockModelServer:
    """The server's state: the request log, the reply function, the usage to report."""

    reply: Callable[[Logged], str | dict[str, Any]] = default_reply
    """The answer: text, or a dict that is one Gemini ``functionCall`` part's value."""
    prompt_tokens: int = 1200
    usage: Callable[[Logged], int] | None = None
    """The prompt tokens to report for one request (else ``prompt_tokens``): lets a test make
    one answer overflow the window without every later one doing so too."""
    requests: list[Logged] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _httpd: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def log(self, entry: Logged) -> None:
        """Record one request."""
        with self._lock:
            self.requests.append(entry)

    def generations(self) -> list[Logged]:
        """The requests that asked for an answer, oldest first."""
        with self._lock:
            return [r for r in self.requests if r.is_generation]

    def start(self) -> MockModelServer:
        """Listen on 127.0.0.1, a free port, in a daemon thread."""
        server = self

        class Handler(_Handler):
            state = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop listening."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    state: MockModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            data = json.loads(raw or b"{}")
        except ValueError:
            data = {"_raw": raw.decode("utf-8", "replace")}
        return data if isinstance(data, dict) else {"_body": data}

    def _record(self, body: dict[str, Any]) -> Logged:
        headers = {
            k.lower(): v for k, v in self.headers.items() if k.lower() not in _SECRET_HEADERS
        }
        entry = Logged(self.command, self.path, headers, body)
        self.state.log(entry)
        return entry

    def _json(self, status: int, data: dict[str, Any]) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _sse(self, events: list[str]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        for data in events:
            self.wfile.write(f"data: {data}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True

    def do_GET(self) -> None:
        self._record({})
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": "mock-model", "object": "model"}]})
            return
        self._json(404, {"error": {"message": f"unknown path {self.path}"}})

    def do_POST(self) -> None:
        body = self._body()
        entry = self._record(body)
        path = self.path.split("?", 1)[0]
        if path.endswith(":countTokens"):
            self._json(200, {"totalTokens": self.state.prompt_tokens})
        elif path.endswith(":streamGenerateContent"):
            self._gemini_stream(entry)
        elif path.endswith(":generateContent"):
            self._json(200, self._gemini_response(entry, self._gemini_text(entry), final=True))
        elif path.endswith("/chat/completions"):
            self._chat(entry)
        else:
            self._json(404, {"error": {"message": f"unknown path {self.path}"}})

    # --- Gemini API ---------------------------------------------------------------------
    def _gemini_text(self, entry: Logged) -> str | dict[str, Any]:
        config = entry.body.get("generationConfig") or {}
        if config.get("responseSchema") or config.get("responseJsonSchema"):
            # Gemini CLI's own side questions (next speaker, loop check) ask for JSON.
            schema = config.get("responseSchema") or config.get("responseJsonSchema")
            return json.dumps(_from_schema(schema), ensure_ascii=False)
        return self.state.reply(entry)

    def _gemini_response(
        self, entry: Logged, text: str | dict[str, Any], final: bool
    ) -> dict[str, Any]:
        part = {"functionCall": text} if isinstance(text, dict) else {"text": text}
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}}
        candidate["index"] = 0
        response: dict[str, Any] = {"candidates": [candidate], "modelVersion": "mock-gemini"}
        if final:
            candidate["finishReason"] = "STOP"
            out = max(1, len(str(text)) // 4)
            response["usageMetadata"] = {
                "promptTokenCount": self.state.prompt_tokens,
                "candidatesTokenCount": out,
                "totalTokenCount": self.state.prompt_tokens + out,
            }
        return response

    def _gemini_stream(self, entry: Logged) -> None:
        text = self._gemini_text(entry)
        chunks: list[str | dict[str, Any]]
        if isinstance(text, dict):
            chunks = [text]
        else:
            half = len(text) // 2
            chunks = [text[:half], text[half:]]
        events = [
            json.dumps(self._gemini_response(entry, chunk, final=i == len(chunks) - 1))
            for i, chunk in enumerate(chunks)
        ]
        self._sse(events)

    # --- OpenAI Chat Completions -----------------------------------------------------------
    def _chat(self, entry: Logged) -> None:
        answer = self.state.reply(entry)
        text = answer if isinstance(answer, str) else json.dumps(answer)
        model = str(entry.body.get("model") or "mock-model")
        ident, created = f"chatcmpl-{uuid.uuid4().hex[:12]}", int(time.time())
        out = max(1, len(text) // 4)
        prompt = self.state.usage(entry) if self.state.usage else self.state.prompt_tokens
        usage = {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out}
        if not entry.body.get("stream"):
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            self._json(
                200,
                {
                    "id": ident,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [choice],
                    "usage": usage,
                },
            )
            return

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            base = {"id": ident, "object": "chat.completion.chunk", "created": created}
            return json.dumps({**base, "model": model, "choices": [choice], **extra})

        half = len(text) // 2
        events = [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": text[:half]}),
            chunk({"content": text[half:]}),
            chunk({}, "stop"),
            json.dumps(
                {
                    "id": ident,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": usage,
                }
            ),
            "[DONE]",
        ]
        self._sse(events)
