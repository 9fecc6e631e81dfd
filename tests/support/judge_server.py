"""A local stand-in for an OpenAI-compatible chat endpoint that answers batch judge prompts."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class BatchChatServer:
    """Speaks ``POST /v1/chat/completions``; answers a batch prompt with a JSON array.

    Its "model" reads each pair: a new fact containing ``moved`` is REPLACE, else KEEP; mode
    ``drop`` omits the last pair, ``garbage`` answers prose. ``GET /v1/models`` lists one
    model, or answers 401 when ``key`` is set and the request's bearer token differs.
    """

    def __init__(self, key: str | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.mode = "ok"
        self.key = key
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                granted = server.key is None or (
                    self.headers.get("Authorization") == f"Bearer {server.key}"
                )
                raw = json.dumps(
                    {"object": "list", "data": [{"id": "small-judge", "object": "model"}]}
                    if granted
                    else {"error": {"message": "Incorrect API key provided", "code": 401}}
                ).encode()
                self.send_response(200 if granted else 401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                user = body["messages"][-1]["content"]
                pairs = json.loads(user.split("\n", 1)[1])
                answer = [
                    {
                        "id": p["id"],
                        "verdict": "REPLACE" if "moved" in p["new"]["text"] else "KEEP",
                        "reason": "stand-in",
                    }
                    for p in pairs
                ]
                if server.mode == "drop":
                    answer = answer[:-1]
                content = "no idea" if server.mode == "garbage" else json.dumps(answer)
                raw = json.dumps(
                    {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "model": body["model"],
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": content}}
                        ],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
