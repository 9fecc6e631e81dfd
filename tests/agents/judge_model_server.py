"""A minimal model server for the judge's agent-CLI tier: Anthropic Messages and OpenAI
Responses, streamed as the real APIs stream them, on 127.0.0.1.

The real ``claude -p`` (``ANTHROPIC_BASE_URL``) and ``codex exec`` (a custom model provider)
talk to it. Its "model" answers the judge's batch prompt: for every pair of the JSON block, a
new fact containing ``moved`` is REPLACE, else KEEP. Any other request (a title, a quota
probe) gets the same kind of short text answer. Every request body is recorded, and the API
key header must be the one the test set (a request without it is refused with 401).
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

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


class JudgeModelServer:
    """Serves ``POST /v1/messages`` (Anthropic) and ``POST /v1/responses`` (OpenAI)."""

    def __init__(self, api_key: str) -> None:
        self.api_key = api_key
        self.requests: list[tuple[str, dict[str, Any]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return

            def _authorised(self) -> bool:
                bearer = self.headers.get("Authorization", "")
                return server.api_key in (self.headers.get("x-api-key"), bearer[7:])

            def do_GET(self) -> None:
                self._json(200, {"data": [], "object": "list"})

            def do_HEAD(self) -> None:
                self._json(200, {})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                path = self.path.split("?")[0]
                server.requests.append((path, body))
                if not self._authorised():
                    self._json(401, {"error": {"type": "authentication_error", "message": "key"}})
                    return
                text = answer_for(_text_of(body))
                if path.endswith("/messages/count_tokens"):
                    self._json(200, {"input_tokens": 10})
                elif path.endswith("/messages"):
                    self._anthropic(body, text)
                elif path.endswith("/responses"):
                    self._responses(body, text)
                else:
                    self._json(404, {"error": {"message": f"no route {path}"}})

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _sse(self, events: list[tuple[str, dict[str, Any]]]) -> None:
                data = "".join(
                    f"event: {name}\ndata: {json.dumps(payload)}\n\n" for name, payload in events
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _anthropic(self, body: dict[str, Any], text: str) -> None:
                model = body.get("model", "claude-stand-in")
                usage = {"input_tokens": 10, "output_tokens": 10}
                message = {
                    "id": "msg_standin",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                }
                if not body.get("stream"):
                    message["content"] = [{"type": "text", "text": text}]
                    message["stop_reason"] = "end_turn"
                    self._json(200, message)
                    return
                self._sse(
                    [
                        ("message_start", {"type": "message_start", "message": message}),
                        (
                            "content_block_start",
                            {
                                "type": "content_block_start",
                                "index": 0,
                                "content_block": {"type": "text", "text": ""},
                            },
                        ),
                        (
                            "content_block_delta",
                            {
                                "type": "content_block_delta",
                                "index": 0,
                                "delta": {"type": "text_delta", "text": text},
                            },
                        ),
                        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                        (
                            "message_delta",
                            {
                                "type": "message_delta",
                                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                "usage": {"output_tokens": 10},
                            },
                        ),
                        ("message_stop", {"type": "message_stop"}),
                    ]
                )

            def _responses(self, body: dict[str, Any], text: str) -> None:
                item = {
                    "id": "msg_standin",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
                response = {
                    "id": "resp_standin",
                    "object": "response",
                    "model": body.get("model", "gpt-stand-in"),
                    "status": "completed",
                    "output": [item],
                    "usage": {
                        "input_tokens": 10,
                        "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens": 10,
                        "output_tokens_details": {"reasoning_tokens": 0},
                        "total_tokens": 20,
                    },
                }
                created = {**response, "status": "in_progress", "output": []}
                self._sse(
                    [
                        ("response.created", {"type": "response.created", "response": created}),
                        (
                            "response.output_item.added",
                            {
                                "type": "response.output_item.added",
                                "output_index": 0,
                                "item": {**item, "status": "in_progress", "content": []},
                            },
                        ),
                        (
                            "response.output_text.delta",
                            {
                                "type": "response.output_text.delta",
                                "item_id": "msg_standin",
                                "output_index": 0,
                                "content_index": 0,
                                "delta": text,
                            },
                        ),
                        (
                            "response.output_item.done",
                            {"type": "response.output_item.done", "output_index": 0, "item": item},
                        ),
                        (
                            "response.completed",
                            {"type": "response.completed", "response": response},
                        ),
                    ]
                )

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        """Stop serving."""
        self.httpd.shutdown()
        self.httpd.server_close()
