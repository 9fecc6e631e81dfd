"""Agent transcripts: context fill and a digest (files, tools, decisions, tasks) from the tail.

Two formats, told apart by their lines:

- **Claude Code** JSONL (``~/.claude/projects/<cwd>/<session>.jsonl``): the last main-chain
  ``assistant`` line's ``message.usage``; tokens in context = ``input_tokens`` +
  ``cache_creation_input_tokens`` + ``cache_read_input_tokens``; window 200k, 1M for
  ``[1m]`` models. A ``compact_boundary`` after it means the context was just compacted.
- **Codex** rollout (``$CODEX_HOME/sessions/…/rollout-*.jsonl``): the last ``token_count``
  event; tokens = ``last_token_usage.total_tokens`` over ``info.model_context_window`` (what
  Codex itself shows).

Transcripts grow to many megabytes and are being appended to while we read: only the tail is
read (widened until a usage line is found), a torn last line is skipped, unreadable lines too.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from nika_tui.domain.context_fill import CODEX_DEFAULT_WINDOW, claude_window, fill_percent
from nika_tui.errors import TranscriptError

FIRST_TAIL_BYTES = 256 * 1024
DIGEST_TAIL_BYTES = 2 * 1024 * 1024
MAX_LINE_TEXT = 300
_CODEX_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)
_CLAUDE_EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$")


class TranscriptFormat(StrEnum):
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    GEMINI_CLI = "gemini-cli"
    OPENCODE = "opencode"


@dataclass(frozen=True, slots=True)
class ContextFill:
    """How full one agent context is, read from its transcript."""

    fill_percent: float
    tokens: int
    window: int
    format: TranscriptFormat
    model: str = ""
    at: datetime | None = None
    compacted: bool = False
    """True when a compaction is the latest event (tokens are 0 until the next turn)."""

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (the ``nika context --json`` shape)."""
        return {
            "fill_percent": self.fill_percent,
            "tokens": self.tokens,
            "window": self.window,
            "format": self.format.value,
            "model": self.model,
            "at": self.at.isoformat() if self.at else None,
            "compacted": self.compacted,
        }


@dataclass(slots=True)
class FileTouch:
    """What a session did to one file."""

    edits: int = 0
    added: int = 0
    removed: int = 0
    last_at: datetime | None = None


@dataclass(slots=True)
class TranscriptDigest:
    """What a handoff needs from a transcript's tail."""

    format: TranscriptFormat
    session_id: str = ""
    cwd: str = ""
    files: dict[str, FileTouch] = field(default_factory=dict)
    tools: dict[str, int] = field(default_factory=dict)
    decisions: list[tuple[datetime | None, str]] = field(default_factory=list)
    todos: list[tuple[str, str]] = field(default_factory=list)
    """(task, status) from the agent's latest todo list / plan."""
    prompts: list[tuple[datetime | None, str]] = field(default_factory=list)
    last_assistant: str = ""


# --- reading -----------------------------------------------------------------------------------
def _read_tail(path: Path, max_bytes: int) -> tuple[list[dict[str, Any]], bool]:
    """JSON objects in the last ``max_bytes`` of ``path``; and whether that reached the start."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            start = max(0, size - max_bytes)
            fh.seek(start)
            raw = fh.read(size - start)
    except OSError as exc:
        raise TranscriptError(
            f"cannot read transcript {path}: {exc.strerror or exc}",
            "check the path (Claude Code: ~/.claude/projects/…/*.jsonl, Codex: "
            "$CODEX_HOME/sessions/…/rollout-*.jsonl)",
        ) from exc
    lines = raw.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first line is cut in the middle
    records: list[dict[str, Any]] = []
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            continue  # a torn last line (being written) or a corrupt one
        if isinstance(obj, dict):
            records.append(obj)
    return records, start == 0


def detect_format(records: Iterable[Mapping[str, Any]]) -> TranscriptFormat | None:
    """The format of these records, or None when no line is recognisable."""
    for rec in records:
        kind = rec.get("type")
        if kind in _CODEX_TYPES and "payload" in rec:
            return TranscriptFormat.CODEX
        if "sessionId" in rec or isinstance(rec.get("message"), dict) or kind == "summary":
            return TranscriptFormat.CLAUDE_CODE
    return None


def _parse_ts(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def _claude_fill(
    records: list[dict[str, Any]], model_hint: str | None, disable_1m: bool = False
) -> ContextFill | None:
    for rec in reversed(records):
        kind = rec.get("type")
        if kind == "system" and rec.get("subtype") == "compact_boundary":
            window = claude_window(model_hint, disable_1m=disable_1m)
            return ContextFill(
                0.0,
                0,
                window,
                TranscriptFormat.CLAUDE_CODE,
                at=_parse_ts(rec.get("timestamp")),
                compacted=True,
            )
        if kind != "assistant" or rec.get("isSidechain"):
            continue
        msg = rec.get("message")
        if not isinstance(msg, dict) or not isinstance(msg.get("usage"), dict):
            continue
        model = str(msg.get("model") or "")
        if model == "<synthetic>":
            continue  # Claude Code's own placeholder turns carry zero usage
        usage = msg["usage"]
        tokens = (
            _int(usage.get("input_tokens"))
            + _int(usage.get("cache_creation_input_tokens"))
            + _int(usage.get("cache_read_input_tokens"))
        )
        window = claude_window(model_hint or model, tokens, disable_1m)
        return ContextFill(
            fill_percent(tokens, window),
            tokens,
            window,
            TranscriptFormat.CLAUDE_CODE,
            model=model_hint or model,
            at=_parse_ts(rec.get("timestamp")),
        )
    return None


def _codex_fill(records: list[dict[str, Any]]) -> ContextFill | None:
    model = ""
    for rec in reversed(records):
        if rec.get("type") == "turn_context" and isinstance(rec.get("payload"), dict):
            model = str(rec["payload"].get("model") or "")
            break
    for rec in reversed(records):
        payload = rec.get("payload")
        if not isinstance(payload, dict):
            continue
        if rec.get("type") == "compacted":
            return ContextFill(
                0.0,
                0,
                CODEX_DEFAULT_WINDOW,
                TranscriptFormat.CODEX,
                model=model,
                at=_parse_ts(rec.get("timestamp")),
                compacted=True,
            )
        if rec.get("type") != "event_msg" or payload.get("type") != "token_count":
            continue
        info = payload.get("info")
        if not isinstance(info, dict):
            continue  # token_count with info=null: rate limits only
        usage = info.get("last_token_usage") or info.get("total_token_usage")
        if not isinstance(usage, dict):
            continue
        tokens = _int(usage.get("total_tokens")) or (
            _int(usage.get("input_tokens")) + _int(usage.get("output_tokens"))
        )
        window = _int(info.get("model_context_window")) or CODEX_DEFAULT_WINDOW
        return ContextFill(
            fill_percent(tokens, window),
            tokens,
            window,
            TranscriptFormat.CODEX,
            model=model,
            at=_parse_ts(rec.get("timestamp")),
        )
    return None


def read_fill(path: Path | str, model: str | None = None, disable_1m: bool = False) -> ContextFill:
    """Context fill of one Claude Code or Codex transcript.

    Args:
        path: The transcript file.
        model: The model the agent runs, when known (a ``[1m]`` suffix selects the 1M window).
        disable_1m: ``CLAUDE_CODE_DISABLE_1M_CONTEXT`` is set for the agent (200k windows).

    Returns:
        The fill from the latest usage line; 0 tokens when the file has none yet.

    Raises:
        TranscriptError: The file cannot be read or is neither format.
    """
    p = Path(path)
    if not p.is_file():
        raise TranscriptError(f"no transcript at {p}", "give the path of a .jsonl transcript file")
    budget = FIRST_TAIL_BYTES
    fmt: TranscriptFormat | None = None
    while True:
        records, whole = _read_tail(p, budget)
        fmt = fmt or detect_format(records)
        if fmt is TranscriptFormat.CLAUDE_CODE:
            found = _claude_fill(records, model, disable_1m)
        elif fmt is TranscriptFormat.CODEX:
            found = _codex_fill(records)
        else:
            found = None
        if found is not None:
            return found
        if whole:
            break
        budget *= 4  # the last usage line is further back (a huge tool output at the end)
    if fmt is None:
        if os.path.getsize(p) == 0:
            raise TranscriptError(f"{p} is empty", "wait for the agent's first turn")
        raise TranscriptError(
            f"{p} is not a Claude Code or Codex transcript",
            "give a Claude Code session .jsonl or a Codex rollout-*.jsonl file",
        )
    window = (
        claude_window(model, disable_1m=disable_1m)
        if fmt is TranscriptFormat.CLAUDE_CODE
        else CODEX_DEFAULT_WINDOW
    )
    return ContextFill(0.0, 0, window, fmt, model=model or "")


# --- digest ------------------------------------------------------------------------------------
def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_LINE_TEXT else text[: MAX_LINE_TEXT - 1] + "…"


def _count_lines(text: Any) -> int:
    return len(str(text).splitlines()) if text else 0


def _touch(
    digest: TranscriptDigest, path: str, added: int, removed: int, at: datetime | None
) -> None:
    touch = digest.files.setdefault(path, FileTouch())
    touch.edits += 1
    touch.added += added
    touch.removed += removed
    touch.last_at = at or touch.last_at


def _claude_tool(digest: TranscriptDigest, block: Mapping[str, Any], at: datetime | None) -> None:
    name = str(block.get("name") or "")
    if not name:
        return
    digest.tools[name] = digest.tools.get(name, 0) + 1
    raw = block.get("input")
    args: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
    if name in _CLAUDE_EDIT_TOOLS:
        path = str(args.get("file_path") or args.get("notebook_path") or "")
        if not path:
            return
        if name == "Write":
            _touch(digest, path, _count_lines(args.get("content")), 0, at)
        elif name == "MultiEdit" and isinstance(args.get("edits"), list):
            added = sum(
                _count_lines(e.get("new_string")) for e in args["edits"] if isinstance(e, dict)
            )
            removed = sum(
                _count_lines(e.get("old_string")) for e in args["edits"] if isinstance(e, dict)
            )
            _touch(digest, path, added, removed, at)
        else:
            _touch(
                digest,
                path,
                _count_lines(args.get("new_string") or args.get("new_source")),
                _count_lines(args.get("old_string")),
                at,
            )
    elif name == "TodoWrite" and isinstance(args.get("todos"), list):
        digest.todos = [
            (_short(str(t.get("content", ""))), str(t.get("status", "pending")))
            for t in args["todos"]
            if isinstance(t, dict) and t.get("content")
        ]


def _claude_digest(records: list[dict[str, Any]]) -> TranscriptDigest:
    digest = TranscriptDigest(TranscriptFormat.CLAUDE_CODE)
    for rec in records:
        if rec.get("isSidechain"):
            continue  # a subagent's own work is summarised by its parent's tool result
        digest.session_id = str(rec.get("sessionId") or digest.session_id)
        digest.cwd = str(rec.get("cwd") or digest.cwd)
        msg = rec.get("message")
        if not isinstance(msg, dict):
            continue
        at = _parse_ts(rec.get("timestamp"))
        content = msg.get("content")
        if rec.get("type") == "user":
            if rec.get("isCompactSummary") or rec.get("isMeta"):
                continue
            if isinstance(content, str) and content.strip():
                digest.prompts.append((at, _short(content)))
            continue
        if rec.get("type") != "assistant" or not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                _claude_tool(digest, block, at)
            elif block.get("type") == "text" and str(block.get("text", "")).strip():
                text = str(block["text"])
                digest.last_assistant = text
                for line in text.splitlines():
                    if line.strip():
                        digest.decisions.append((at, _short(line)))
    return digest


def _codex_patch(digest: TranscriptDigest, patch: str, at: datetime | None) -> None:
    current: str | None = None
    counts: dict[str, list[int]] = {}
    for line in patch.splitlines():
        m = _PATCH_FILE.match(line)
        if m:
            current = m.group(2).strip()
            counts.setdefault(current, [0, 0])
        elif current and line.startswith("+") and not line.startswith("+++"):
            counts[current][0] += 1
        elif current and line.startswith("-") and not line.startswith("---"):
            counts[current][1] += 1
    for path, (added, removed) in counts.items():
        _touch(digest, path, added, removed, at)


def _item_text(item: Mapping[str, Any]) -> str:
    """The text of a current-format ``item_completed`` item (UserMessage / AgentMessage)."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return str(item.get("text") or "")
    return "".join(
        str(part.get("text") or "")
        for part in content
        if isinstance(part, dict) and str(part.get("type", "")).lower() == "text"
    )


def _response_text(payload: Mapping[str, Any]) -> str:
    """The text of a ``response_item`` message (input_text / output_text parts)."""
    content = payload.get("content")
    if not isinstance(content, list):
        return ""
    return "".join(
        str(part.get("text") or "")
        for part in content
        if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text")
    )


def _codex_messages(
    records: list[dict[str, Any]],
) -> tuple[list[tuple[datetime | None, str]], list[tuple[datetime | None, str]]]:
    """(user prompts, agent messages) of a rollout, whatever its generation.

    Codex 0.17x writes turns as ``event_msg`` ``item_completed`` (``item.type`` UserMessage /
    AgentMessage); earlier builds as ``event_msg`` ``user_message`` / ``agent_message``. Both
    are read (a rollout that has both has them for the same turns, so one source is kept:
    the events if any, else ``response_item`` messages, which both generations write but which
    also carry the CLI's own context blocks).
    """
    events_user: list[tuple[datetime | None, str]] = []
    events_agent: list[tuple[datetime | None, str]] = []
    items_user: list[tuple[datetime | None, str]] = []
    items_agent: list[tuple[datetime | None, str]] = []
    for rec in records:
        payload = rec.get("payload")
        if not isinstance(payload, dict):
            continue
        at = _parse_ts(rec.get("timestamp"))
        kind, ptype = rec.get("type"), payload.get("type")
        if kind == "event_msg" and ptype == "user_message":
            events_user.append((at, str(payload.get("message") or "")))
        elif kind == "event_msg" and ptype == "agent_message":
            events_agent.append((at, str(payload.get("message") or "")))
        elif kind == "event_msg" and ptype == "item_completed":
            item = payload.get("item")
            if isinstance(item, dict) and item.get("type") == "UserMessage":
                events_user.append((at, _item_text(item)))
            elif isinstance(item, dict) and item.get("type") == "AgentMessage":
                events_agent.append((at, _item_text(item)))
        elif kind == "response_item" and ptype == "message":
            text = _response_text(payload)
            if payload.get("role") == "assistant":
                items_agent.append((at, text))
            elif payload.get("role") == "user" and not text.lstrip().startswith("<"):
                items_user.append((at, text))  # skip <environment_context> and the like
    users = _dedupe(events_user or items_user)
    agents = _dedupe(events_agent or items_agent)
    return users, agents


def _dedupe(entries: list[tuple[datetime | None, str]]) -> list[tuple[datetime | None, str]]:
    """Non-empty texts, a text repeated right after itself kept once (both event kinds)."""
    out: list[tuple[datetime | None, str]] = []
    for at, text in entries:
        if text.strip() and not (out and out[-1][1] == text):
            out.append((at, text))
    return out


def _codex_digest(records: list[dict[str, Any]]) -> TranscriptDigest:
    digest = TranscriptDigest(TranscriptFormat.CODEX)
    users, agents = _codex_messages(records)
    digest.prompts = [(at, _short(text)) for at, text in users]
    for at, text in agents:
        digest.last_assistant = text
        digest.decisions.extend((at, _short(x)) for x in text.splitlines() if x.strip())
    for rec in records:
        payload = rec.get("payload")
        if not isinstance(payload, dict):
            continue
        at = _parse_ts(rec.get("timestamp"))
        kind, ptype = rec.get("type"), payload.get("type")
        if kind == "session_meta":
            digest.session_id = str(payload.get("id") or digest.session_id)
            digest.cwd = str(payload.get("cwd") or digest.cwd)
        elif kind == "turn_context":
            digest.cwd = str(payload.get("cwd") or digest.cwd)
        elif kind == "response_item" and ptype in ("function_call", "custom_tool_call"):
            name = str(payload.get("name") or "")
            if not name:
                continue
            digest.tools[name] = digest.tools.get(name, 0) + 1
            raw = payload.get("input") if ptype == "custom_tool_call" else payload.get("arguments")
            if name == "apply_patch" and isinstance(raw, str):
                _codex_patch(digest, raw, at)
            elif name == "update_plan" and isinstance(raw, str):
                try:
                    plan = json.loads(raw).get("plan", [])
                except (ValueError, AttributeError):
                    plan = []
                digest.todos = [
                    (_short(str(p.get("step", ""))), str(p.get("status", "pending")))
                    for p in plan
                    if isinstance(p, dict) and p.get("step")
                ]
    return digest


def read_digest(path: Path | str, max_bytes: int = DIGEST_TAIL_BYTES) -> TranscriptDigest:
    """Files, tools, decisions, tasks and prompts from the tail of a transcript.

    Raises:
        TranscriptError: The file cannot be read or is neither format.
    """
    p = Path(path)
    if not p.is_file():
        raise TranscriptError(f"no transcript at {p}", "give the path of a .jsonl transcript file")
    records, _ = _read_tail(p, max_bytes)
    fmt = detect_format(records)
    if fmt is TranscriptFormat.CLAUDE_CODE:
        return _claude_digest(records)
    if fmt is TranscriptFormat.CODEX:
        return _codex_digest(records)
    raise TranscriptError(
        f"{p} is not a Claude Code or Codex transcript",
        "give a Claude Code session .jsonl or a Codex rollout-*.jsonl file",
    )
