"""What every local model stand-in shares: the HTTP server, the request log, JSON and SSE framing.

A protocol (Anthropic Messages, OpenAI Responses, Gemini, Chat Completions) only builds the
events or the JSON it answers with (see the sibling modules); a stand-in subclasses
:class:`ModelServer` and routes ``POST`` requests to them in :meth:`ModelServer.answer`.
Every request is logged (method, path, headers without credentials, JSON body) so a test can
assert what reached the model; when ``api_key`` is set, a request without it is refused with 401
after it is logged, as the real APIs refuse a bad key (model lists answer without one).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self

SECRET_HEADERS = frozenset({"authorization", "x-api-key", "x-goog-api-key"})
"""Never logged: a test log must not hold a key, even a fake one."""


@dataclass
class Logged:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def route(self) -> str:
        """The path without its query string."""
        return self.path.split("?", 1)[0]


@dataclass
class ModelServer:
    """The server's state: the request log and the key it demands; subclasses answer."""

    api_key: str | None = None
    """When set, ``x-api-key`` or ``Authorization: Bearer`` must carry it (else 401)."""
    requests: list[Logged] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _httpd: ThreadingHTTPServer | None = field(default=None, repr=False)

    logged: ClassVar[type[Logged]] = Logged
    """The log entry type (a protocol's stand-in adds readers such as ``text()``)."""

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def log(self, entry: Logged) -> None:
        """Record one request."""
        with self._lock:
            self.requests.append(entry)

    def logged_where(self, route_suffixes: tuple[str, ...], method: str = "POST") -> list[Logged]:
        """The logged requests whose route ends with one of ``route_suffixes``, oldest first."""
        with self._lock:
            return [
                r for r in self.requests if r.method == method and r.route.endswith(route_suffixes)
            ]

    def clear(self) -> None:
        """Forget the logged requests."""
        with self._lock:
            self.requests.clear()

    def start(self) -> Self:
        """Listen on 127.0.0.1, a free port, in a daemon thread."""

        class Handler(Exchange):
            pass

        Handler.state = self

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Shut the server down."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def answer_get(self, exchange: Exchange, entry: Logged) -> None:
        """``GET``: an empty model list under ``/models``, else 404."""
        if entry.route.rstrip("/").endswith("/models"):
            exchange.json(200, {"data": [], "models": [], "object": "list"})
        else:
            exchange.json(404, {"error": {"type": "not_found", "message": entry.path}})

    def answer(self, exchange: Exchange, entry: Logged) -> None:
        """``POST``: the protocol's answer (subclasses route by ``entry.route``)."""
        exchange.json(404, {"error": {"type": "not_found", "message": entry.path}})


class Exchange(BaseHTTPRequestHandler):
    """One request: reads and logs it, checks the key, writes JSON or SSE back."""

    state: ModelServer
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

    def _record(self, body: dict[str, Any]) -> Logged:
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() not in SECRET_HEADERS}
        entry = self.state.logged(self.command, self.path, headers, body)
        self.state.log(entry)
        return entry

    def _authorised(self) -> bool:
        key = self.state.api_key
        bearer = self.headers.get("Authorization", "")
        return key is None or key in (self.headers.get("x-api-key"), bearer[7:])

    def json(self, status: int, obj: Any) -> None:
        """One JSON answer."""
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def sse(self, events: Iterable[tuple[str | None, Any]]) -> None:
        """Server-Sent Events, one flushed per event, then the connection closes.

        Args:
            events: ``(name, data)``; a ``None`` name writes a bare ``data:`` line (Gemini,
                Chat Completions); a ``str`` data is written as is (``[DONE]``), else as JSON.
        """
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in events:
            line = data if isinstance(data, str) else json.dumps(data)
            head = f"event: {name}\n" if name is not None else ""
            self.wfile.write(f"{head}data: {line}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True

    def do_GET(self) -> None:
        # Model lists answer without the key, as the judge's stand-in always did.
        self.state.answer_get(self, self._record({}))

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        entry = self._record(self._body())
        if not self._authorised():
            # Anthropic's documented error body (OpenAI clients read ``error.message`` too).
            error = {"type": "authentication_error", "message": "invalid x-api-key"}
            self.json(401, {"type": "error", "error": error})
            return
        self.state.answer(self, entry)
