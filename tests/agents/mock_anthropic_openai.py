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
it returns a text, or a :class:`ToolCall`: then the answer is one ``tool_use`` block (Anthropic,
``input_json_delta``, ``stop_reason: tool_use``) or one ``function_call`` item (Responses), as
a model asking the CLI to run a tool (a Codex MCP tool offered inside a ``namespace`` tool is
named by its qualified name, ``mcp__nika__memory_recall``, and answered with ``namespace`` and
``name`` apart, as Codex expects). :func:`tools_offered` and :func:`calls_made` read a
request's tools and the tool calls (with their results) already in its history, for either API;
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


@dataclass(frozen=True)
class ToolCall:
    """An answer that calls one tool (``name`` exactly as the request's tools list spells it)."""

    name: str
    arguments: dict[str, Any]


Reply = str | ToolCall


def tools_offered(body: dict[str, Any]) -> list[str]:
    """The names of the tools the request offers the model (either API).

    A Responses ``namespace`` tool (Codex groups an MCP server's tools in one, ``mcp__nika``)
    contributes its members' qualified names, ``mcp__nika__memory_recall``: the name a
    :class:`ToolCall` uses, split back into ``namespace`` and ``name`` on the wire.
    """
    names: list[str] = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict) or "name" not in tool:
            continue
        if tool.get("type") == "namespace":
            members = [m["name"] for m in tool.get("tools") or [] if "name" in m]
            names += [f"{tool['name']}__{member}" for member in members]
        else:
            names.append(str(tool["name"]))
    return names


def _namespaced(body: dict[str, Any], qualified: str) -> tuple[str | None, str]:
    """(namespace, name) of a qualified tool name offered in a namespace, else (None, name)."""
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and tool.get("type") == "namespace":
            prefix = f"{tool['name']}__"
            members = {m.get("name") for m in tool.get("tools") or []}
            if qualified.startswith(prefix) and qualified[len(prefix) :] in members:
                return str(tool["name"]), qualified[len(prefix) :]
    return None, qualified


@dataclass(frozen=True)
class CallMade:
    """A tool call already in the request's history, and the result the CLI sent back."""

    name: str
    arguments: dict[str, Any]
    result: str | None


def calls_made(body: dict[str, Any]) -> list[CallMade]:
    """The tool calls in the history of an Anthropic or Responses request, oldest first."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    results: dict[str, str] = {}
    for msg in body.get("messages") or []:
        content = msg.get("content") if isinstance(msg, dict) else None
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                calls[block["id"]] = (block["name"], dict(block.get("input") or {}))
            elif block.get("type") == "tool_result":
                results[block["tool_use_id"]] = _flatten(block.get("content"))
    items = body.get("input")
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            try:
                args = json.loads(item.get("arguments") or "{}")
            except ValueError:
                args = {}
            namespace = item.get("namespace")
            name = f"{namespace}__{item['name']}" if namespace else item["name"]
            calls[item["call_id"]] = (name, args)
        elif item.get("type") == "function_call_output":
            results[item["call_id"]] = _flatten(item.get("output"))
    return [CallMade(name, args, results.get(cid)) for cid, (name, args) in calls.items()]


def _flatten(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_flatten(c) for c in content)
    if isinstance(content, dict):
        return str(content.get("text") or content.get("output") or _flatten(content.get("content")))
    return "" if content is None else json.dumps(content)


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

    reply: Callable[[dict[str, Any]], Reply] = default_reply
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
            answer = self.state.reply(body)
            if isinstance(answer, ToolCall):
                self._sse(_responses_call_events(answer, body, self.state.input_tokens))
            else:
                self._sse(_responses_events(answer, body, self.state.input_tokens))
        else:
            self._json(404, {"error": {"type": "not_found", "message": path}})

    def _anthropic(self, body: dict[str, Any]) -> None:
        answer = self.state.reply(body)
        model = str(body.get("model") or "claude-mock")
        msg_id = f"msg_{uuid.uuid4().hex[:24]}"
        if isinstance(answer, ToolCall):
            self._anthropic_tool_use(body, answer, model, msg_id)
            return
        text = answer
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

    def _anthropic_tool_use(
        self, body: dict[str, Any], call: ToolCall, model: str, msg_id: str
    ) -> None:
        block = {
            "type": "tool_use",
            "id": f"toolu_{uuid.uuid4().hex[:24]}",
            "name": call.name,
            "input": call.arguments,
        }
        usage = {
            "input_tokens": self.state.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 20,
        }
        message = {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [block],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            self._json(200, message)
            return

        def events() -> Iterator[tuple[str, dict[str, Any]]]:
            start = {**message, "content": [], "stop_reason": None}
            yield "message_start", {"type": "message_start", "message": start}
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {**block, "input": {}},
                },
            )
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {
                        "type": "input_json_delta",
                        "partial_json": json.dumps(call.arguments),
                    },
                },
            )
            yield "content_block_stop", {"type": "content_block_stop", "index": 0}
            yield (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                    "usage": {"output_tokens": 20},
                },
            )
            yield "message_stop", {"type": "message_stop"}

        self._sse(events())


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


def _responses_call_events(
    call: ToolCall, body: dict[str, Any], input_tokens: int
) -> Iterator[tuple[str, dict[str, Any]]]:
    resp_id = f"resp_{uuid.uuid4().hex[:24]}"
    model = str(body.get("model") or "gpt-mock")
    base = {"id": resp_id, "object": "response", "model": model, "status": "in_progress"}
    arguments = json.dumps(call.arguments)
    namespace, name = _namespaced(body, call.name)
    item = {
        "id": f"fc_{uuid.uuid4().hex[:24]}",
        "type": "function_call",
        "call_id": f"call_{uuid.uuid4().hex[:24]}",
        "name": name,
        **({"namespace": namespace} if namespace else {}),
        "arguments": "",
        "status": "in_progress",
    }
    yield "response.created", {"type": "response.created", "response": {**base, "output": []}}
    yield (
        "response.output_item.added",
        {"type": "response.output_item.added", "output_index": 0, "item": item},
    )
    yield (
        "response.function_call_arguments.delta",
        {
            "type": "response.function_call_arguments.delta",
            "item_id": item["id"],
            "output_index": 0,
            "delta": arguments,
        },
    )
    yield (
        "response.function_call_arguments.done",
        {
            "type": "response.function_call_arguments.done",
            "item_id": item["id"],
            "output_index": 0,
            "arguments": arguments,
        },
    )
    done = {**item, "arguments": arguments, "status": "completed"}
    yield (
        "response.output_item.done",
        {"type": "response.output_item.done", "output_index": 0, "item": done},
    )
    yield (
        "response.completed",
        {
            "type": "response.completed",
            "response": {
                **base,
                "status": "completed",
                "output": [done],
                "usage": {
                    "input_tokens": input_tokens,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 20,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": input_tokens + 20,
                },
            },
        },
    )
