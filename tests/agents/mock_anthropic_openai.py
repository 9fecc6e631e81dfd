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

Every request is logged (path, headers without credentials, JSON body) so tests can assert what
reached the model. Answers come from ``reply``, a function of the request body (tests set it);
the usage each answer reports (``input_tokens``) is settable, so a test can drive the context fill
the CLI sees.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_SECRET_HEADERS = frozenset({"authorization", "x-api-key"})


@dataclass
class Logged:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    def text(self) -> str:
        """Everything the model would read in this request (system, messages, input) as text."""
        return json.dumps(
            {k: self.body.get(k) for k in ("system", "messages", "instructions", "input")},
            ensure_ascii=False,
        )


def default_reply(body: dict[str, Any]) -> str:
    """A short answer; a compaction request gets a summary (both CLIs ask for one)."""
    text = json.dumps(body.get("messages") or body.get("input") or "", ensure_ascii=False)
    lowered = text.lower()
    if "summary" in lowered and ("conversation" in lowered or "compact" in lowered):
        return "<summary>The user and the assistant discussed the project.</summary>"
    return "Noted. I have recorded that and I am ready for the next step of the task."


@dataclass
class MockModelServer:
    """The server's state: the request log, the reply function, the usage to report."""

    reply: Callable[[dict[str, Any]], str] = default_reply
    input_tokens: int = 1200
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

    def model_requests(self, path_suffix: str = "") -> list[Logged]:
        """Requests that asked the model for an answer (not token counts or model lists)."""
        with self._lock:
            return [
                r
                for r in self.requests
                if r.method == "POST"
                and r.path.split("?")[0].endswith(("/messages", "/responses"))
                and r.path.split("?")[0].endswith(path_suffix)
            ]

    def clear(self) -> None:
        """Forget the logged requests."""
        with self._lock:
            self.requests.clear()

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
        """Shut the server down."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    state: MockModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request log is ours; stderr stays quiet

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Encoding") == "zstd":
            return {"_undecodable": True}
        try:
            value = json.loads(raw or b"{}")
        except ValueError:
            return {"_raw": raw[:2000].decode("utf-8", "replace")}
        return value if isinstance(value, dict) else {"_value": value}

    def _record(self, body: dict[str, Any]) -> None:
        headers = {
            k.lower(): v for k, v in self.headers.items() if k.lower() not in _SECRET_HEADERS
        }
        self.state.log(Logged(self.command, self.path, headers, body))

    def _json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: Iterator[tuple[str, dict[str, Any]]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True

    def do_GET(self) -> None:
        self._record({})
        if self.path.split("?")[0].endswith("/models"):
            self._json(200, {"data": [], "models": [], "object": "list"})
        else:
            self._json(404, {"error": {"type": "not_found", "message": self.path}})

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        body = self._body()
        self._record(body)
        path = self.path.split("?")[0]
        if path.endswith("/messages/count_tokens"):
            self._json(200, {"input_tokens": self.state.input_tokens})
        elif path.endswith("/messages"):
            self._anthropic(body)
        elif path.endswith("/responses"):
            self._sse(_responses_events(self.state.reply(body), body, self.state.input_tokens))
        else:
            self._json(404, {"error": {"type": "not_found", "message": path}})

    def _anthropic(self, body: dict[str, Any]) -> None:
        text = self.state.reply(body)
        model = str(body.get("model") or "claude-mock")
        msg_id = f"msg_{uuid.uuid4().hex[:24]}"
        usage = {
            "input_tokens": self.state.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": max(1, len(text) // 4),
        }
        if not body.get("stream"):
            self._json(
                200,
                {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": usage,
                },
            )
            return
        self._sse(_anthropic_events(msg_id, model, text, usage))


def _anthropic_events(
    msg_id: str, model: str, text: str, usage: dict[str, int]
) -> Iterator[tuple[str, dict[str, Any]]]:
    start_usage = {**usage, "output_tokens": 1}
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": start_usage,
            },
        },
    )
    yield (
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    )
    for i in range(0, len(text), 40):
        yield (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text[i : i + 40]},
            },
        )
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _responses_events(
    text: str, body: dict[str, Any], input_tokens: int
) -> Iterator[tuple[str, dict[str, Any]]]:
    resp_id = f"resp_{uuid.uuid4().hex[:24]}"
    item_id = f"msg_{uuid.uuid4().hex[:24]}"
    model = str(body.get("model") or "gpt-mock")
    base = {"id": resp_id, "object": "response", "model": model, "status": "in_progress"}
    yield "response.created", {"type": "response.created", "response": {**base, "output": []}}
    yield (
        "response.output_item.added",
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {
                "id": item_id,
                "type": "message",
                "role": "assistant",
                "status": "in_progress",
                "content": [],
            },
        },
    )
    for i in range(0, len(text), 40):
        yield (
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "delta": text[i : i + 40],
            },
        )
    item = {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    yield (
        "response.output_item.done",
        {"type": "response.output_item.done", "output_index": 0, "item": item},
    )
    output_tokens = max(1, len(text) // 4)
    yield (
        "response.completed",
        {
            "type": "response.completed",
            "response": {
                **base,
                "status": "completed",
                "output": [item],
                "usage": {
                    "input_tokens": input_tokens,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": output_tokens,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": input_tokens + output_tokens,
                },
            },
        },
    )
