"""A local Anthropic Messages API for the real ``claude -p`` (``ANTHROPIC_BASE_URL``), offline.

``POST /v1/messages`` answers ``answer to: {the last user text}`` — as the SSE sequence
``message_start``, ``content_block_start``, ``content_block_delta`` (``text_delta``),
``content_block_stop``, ``message_delta``, ``message_stop`` when ``stream`` is true, else one
JSON message; ``POST /v1/messages/count_tokens`` answers a count; every request body is kept
so a test can read what reached the model.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._json(200, {"data": [], "object": "list"})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        path = self.path.split("?")[0]
        if path.endswith("/count_tokens"):
            self._json(200, {"input_tokens": 1000})
            return
        if not path.endswith("/messages"):
            self._json(404, {"type": "error", "error": {"type": "not_found_error"}})
            return
        with self.server.lock:
            self.server.requests.append(body)
        text = f"answer to: {last_user_text(body)}"
        msg = {"id": f"msg_{uuid.uuid4().hex[:20]}", "type": "message", "role": "assistant",
               "model": body.get("model") or "claude-mock", "content": [],
               "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 1000, "output_tokens": 1}}  # fmt: skip
        if not body.get("stream"):
            done = {**msg, "content": [{"type": "text", "text": text}], "stop_reason": "end_turn"}
            self._json(200, done)
            return
        events = [
            ("message_start", {"type": "message_start", "message": msg}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "text_delta", "text": text}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                               "usage": {"output_tokens": max(1, len(text) // 4)}}),
            ("message_stop", {"type": "message_stop"}),
        ]  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextmanager
def running_mock() -> Iterator[_Server]:
    """The mock on 127.0.0.1 (any free port), shut down afterwards."""
    server = _Server()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
