"""Readers of the agent CLIs' session files, each in the format the CLI writes on disk.

- **Claude Code** (``~/.claude/projects/<cwd>/<session>.jsonl``): one JSON object per line;
  ``type`` ``user`` / ``assistant`` with ``message.content`` (a string, or blocks of which
  ``text`` blocks are kept), ``timestamp``, ``sessionId``, ``cwd``; side chains (sub-agents)
  and ``isMeta`` lines are not the conversation and are left out.
- **Codex** rollouts (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl``):
  current format: ``{"timestamp", "type", "payload"}`` lines; messages are ``event_msg``
  ``user_message`` / ``agent_message`` (``payload.message``) and, in the newest CLIs,
  ``event_msg`` ``item_completed`` with ``item.type`` ``UserMessage`` / ``AgentMessage``
  (``item.content`` text blocks). ``response_item`` messages repeat them and are used only
  when a file has no ``event_msg`` message. The oldest format (2025) has a first line
  ``{"id", "timestamp", "instructions"}`` and bare ``{"type": "message", "role", "content"}``
  items without timestamps (they take the session's).
- **Gemini CLI** (``~/.gemini/tmp/<project hash>/chats/session-*.jsonl``, its
  ``ChatRecordingService``): a metadata line (``sessionId``, ``projectHash``, ``startTime``,
  ``kind``), message lines (``id``, ``timestamp``, ``type`` ``user`` / ``gemini`` / ``info`` /
  ``error`` / ``warning``, ``content``: a string or parts with ``text``; a re-appended id
  replaces the message in place), ``{"$rewindTo": id}`` (drops that message and every later
  one) and ``{"$set": {…}}`` (metadata; a ``messages`` list replaces them all). Sub-agent
  sessions (``kind: subagent``, nested under the parent's id) are left out: the parent
  holds the conversation. Older releases wrote one JSON object ``session-*.json`` with the
  same fields and a ``messages`` list; both are read.
- **OpenCode** 1.2 and later (``$XDG_DATA_HOME/opencode/opencode.db``, SQLite through
  drizzle, ``packages/opencode/src/session/session.sql.ts``): tables ``session`` (``id``,
  ``directory``, ``parent_id`` — a sub-agent's session, left out — ``time_created`` ms),
  ``message`` (``session_id``, ``time_created``, ``data`` JSON with ``role``) and ``part``
  (``message_id``, ``data`` JSON: ``type: text``, ``text``; ``synthetic`` parts are the
  CLI's, not the person's); read-only. Up to 1.1, the JSON tree ``storage/``:
  ``session/<project>/<ses>.json`` (``id``, ``directory``, ``time.created``),
  ``message/<ses>/<msg>.json`` (``role``, ``time.created`` in epoch ms) and
  ``part/<msg>/<part>.json`` (same part shape).

A line that is not JSON is a torn write when it is the last one (skipped with a note);
anywhere else the file is malformed and nothing of it is imported.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nika_tui.importer.items import ImportSkip, Message, Session

_CODEX_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)


def parse_time(value: object) -> datetime | None:
    """An ISO-8601 string or an epoch (seconds or milliseconds) as aware UTC, else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        seconds = value / 1000.0 if value > 1e11 else float(value)
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    return None


# A bad line in the middle is not a torn write: the file was edited or two writers interleaved.
_MALFORMED_HINT = (
    "check that line (edited by hand, or two processes writing the file at once?); "
    "fix or delete it and run the import again"
)


def jsonl_objects(text: str) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """``[(line number, object)]`` of a JSONL text, and notes on a torn last line.

    Raises:
        ImportSkip: a line other than the last is not a JSON object (the file is malformed).
    """
    lines = text.split("\n")
    last = max((i for i, raw in enumerate(lines) if raw.strip()), default=-1)
    out: list[tuple[int, dict[str, Any]]] = []
    notes: list[str] = []
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            if i == last:
                notes.append(
                    f"line {i + 1}: truncated JSON line skipped ({exc.msg}): a write cut short "
                    "(the CLI still running, or killed); the lines before it are imported, "
                    "run the import again once the session has ended"
                )
                continue
            raise ImportSkip(
                f"malformed JSONL at line {i + 1} ({exc.msg}): {_MALFORMED_HINT}"
            ) from None
        if not isinstance(obj, dict):
            raise ImportSkip(
                f"malformed JSONL at line {i + 1} (not a JSON object): {_MALFORMED_HINT}"
            )
        out.append((i + 1, obj))
    return out, notes


def _blocks_text(content: object, kinds: Sequence[str] = ("text",)) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        # Codex 0.171 writes an AgentMessage's blocks as {"type": "Text"}: compare folded.
        parts = [
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and str(b.get("type", "text")).lower() in kinds and b.get("text")
        ]
        return "\n".join(parts)
    return ""


def sniff_jsonl(objects: Sequence[tuple[int, dict[str, Any]]]) -> str:
    """``claude-code`` or ``codex`` from a JSONL file's objects.

    Raises:
        ImportSkip: neither format.
    """
    for _line, obj in objects[:20]:
        if isinstance(obj.get("sessionId"), str) and isinstance(obj.get("projectHash"), str):
            return "gemini"
        if obj.get("type") in _CODEX_TYPES and "payload" in obj:
            return "codex"
        if "sessionId" in obj and obj.get("type") in ("user", "assistant", "summary", "system"):
            return "claude-code"
    if objects and "instructions" in objects[0][1] and "id" in objects[0][1]:
        return "codex"
    raise ImportSkip(
        "a JSONL file in no session format we know (Claude Code, Codex, Gemini): "
        "name only session files or folders of them"
    )


def read_claude(objects: Sequence[tuple[int, dict[str, Any]]], fallback_id: str) -> Session:
    """A Claude Code session (see the module docstring)."""
    session = Session("claude-code", fallback_id, "")
    for line, obj in objects:
        kind = obj.get("type")
        if kind not in ("user", "assistant") or obj.get("isSidechain") or obj.get("isMeta"):
            continue
        session.session_id = str(obj.get("sessionId") or session.session_id)
        session.cwd = session.cwd or str(obj.get("cwd") or "")
        at = parse_time(obj.get("timestamp"))
        message = obj.get("message")
        if at is None or not isinstance(message, dict):
            continue
        text = _blocks_text(message.get("content")).strip()
        if text:
            session.messages.append(Message(str(kind), text, at, line))
    return session


def read_codex(objects: Sequence[tuple[int, dict[str, Any]]], fallback_id: str) -> Session:
    """A Codex rollout, current or oldest format (see the module docstring)."""
    session = Session("codex", fallback_id, "")
    events: list[Message] = []
    responses: list[Message] = []
    start: datetime | None = None
    for line, obj in objects:
        payload = obj.get("payload")
        at = parse_time(obj.get("timestamp")) or start
        if not isinstance(payload, dict):
            # Oldest format: a header line, then bare response items.
            if "instructions" in obj and "id" in obj:
                session.session_id = str(obj["id"])
                start = parse_time(obj.get("timestamp"))
            elif obj.get("type") == "message" and at is not None:
                role = str(obj.get("role", ""))
                text = _blocks_text(obj.get("content"), ("input_text", "output_text")).strip()
                if role in ("user", "assistant") and text:
                    responses.append(Message(role, text, at, line))
            continue
        kind, ptype = obj.get("type"), payload.get("type")
        if kind == "session_meta":
            session.session_id = str(payload.get("id") or session.session_id)
            session.cwd = str(payload.get("cwd") or "")
            start = parse_time(payload.get("timestamp")) or at
        elif at is None:
            continue
        elif kind == "event_msg" and ptype in ("user_message", "agent_message"):
            role = "user" if ptype == "user_message" else "assistant"
            text = str(payload.get("message") or "").strip()
            if text:
                events.append(Message(role, text, at, line))
        elif kind == "event_msg" and ptype == "item_completed":
            item = payload.get("item")
            if isinstance(item, dict) and item.get("type") in ("UserMessage", "AgentMessage"):
                role = "user" if item["type"] == "UserMessage" else "assistant"
                text = (_blocks_text(item.get("content")) or str(item.get("text") or "")).strip()
                if text:
                    events.append(Message(role, text, at, line))
        elif kind == "response_item" and ptype == "message":
            role = str(payload.get("role", ""))
            text = _blocks_text(payload.get("content"), ("input_text", "output_text")).strip()
            if role in ("user", "assistant") and text:
                responses.append(Message(role, text, at, line))
    session.messages = _dedupe(events or responses)
    return session


def _dedupe(messages: list[Message]) -> list[Message]:
    """A message repeated right after itself (a CLI writing both event kinds) kept once."""
    out: list[Message] = []
    for msg in messages:
        if not (out and (out[-1].role, out[-1].text) == (msg.role, msg.text)):
            out.append(msg)
    return out


def read_gemini(data: object, fallback_id: str) -> Session:
    """A Gemini CLI chat file (see the module docstring).

    Raises:
        ImportSkip: not a Gemini CLI session.
    """
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise ImportSkip(
            "a JSON file that is not a Gemini CLI session (no messages list): name only "
            "Gemini CLI's session files, or rename this one if it is not a session"
        )
    session = Session("gemini", str(data.get("sessionId") or fallback_id), "")
    start = parse_time(data.get("startTime"))
    for n, msg in enumerate(data["messages"], start=1):
        if not isinstance(msg, dict) or msg.get("type") not in ("user", "gemini"):
            continue
        at = parse_time(msg.get("timestamp")) or start
        text = _blocks_text(msg.get("content")).strip()
        if at is not None and text:
            role = "user" if msg["type"] == "user" else "assistant"
            session.messages.append(Message(role, text, at, n))
    return session


def read_gemini_jsonl(objects: Sequence[tuple[int, dict[str, Any]]], fallback_id: str) -> Session:
    """A Gemini CLI JSONL session, replayed as its recorder loads it (module docstring).

    Raises:
        ImportSkip: a sub-agent session.
    """
    meta: dict[str, Any] = {}
    messages: dict[str, tuple[int, dict[str, Any]]] = {}
    for line, obj in objects:
        if isinstance(obj.get("$rewindTo"), str):
            ids = list(messages)
            cut = ids.index(obj["$rewindTo"]) if obj["$rewindTo"] in messages else 0
            for mid in ids[cut:]:
                del messages[mid]
        elif isinstance(obj.get("id"), str):
            messages[obj["id"]] = (line, obj)
        elif isinstance(obj.get("$set"), dict):
            update = obj["$set"]
            if isinstance(update.get("messages"), list):
                messages = {
                    str(m["id"]): (line, m)
                    for m in update["messages"]
                    if isinstance(m, dict) and isinstance(m.get("id"), str)
                }
            meta.update({k: v for k, v in update.items() if k != "messages"})
        elif isinstance(obj.get("sessionId"), str):
            meta.update({k: v for k, v in obj.items() if k != "messages"})
            for m in obj.get("messages") or []:
                if isinstance(m, dict) and isinstance(m.get("id"), str):
                    messages[m["id"]] = (line, m)
    if meta.get("kind") == "subagent":
        raise ImportSkip("a Gemini CLI sub-agent session (its parent session holds the turns)")
    session = Session("gemini", str(meta.get("sessionId") or fallback_id), "")
    dirs = meta.get("directories")
    if isinstance(dirs, list) and dirs:
        session.cwd = str(dirs[0])
    start = parse_time(meta.get("startTime"))
    for line, msg in messages.values():
        if msg.get("type") not in ("user", "gemini"):
            continue
        at = parse_time(msg.get("timestamp")) or start
        text = _blocks_text(msg.get("content")).strip()
        if at is not None and text:
            session.messages.append(
                Message("user" if msg["type"] == "user" else "assistant", text, at, line)
            )
    return session


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ImportSkip(
            f"{path.name} is not UTF-8 (offset {exc.start}): convert it to UTF-8 "
            "and run the import again"
        ) from None
    except (json.JSONDecodeError, OSError) as exc:
        raise ImportSkip(
            f"{path.name} is not readable JSON ({exc}): check the file's permissions and "
            "that OpenCode finished writing it"
        ) from None


def read_opencode(storage: Path, session_file: Path) -> Session:
    """One OpenCode session from its storage tree (see the module docstring).

    Raises:
        ImportSkip: the session, one of its messages or parts is unreadable (all or nothing).
    """
    info = _read_json(session_file)
    if not isinstance(info, dict) or not isinstance(info.get("id"), str):
        raise ImportSkip(
            "an OpenCode session file without an id: check that OpenCode finished writing it "
            "(not a copy cut short or edited by hand) and run the import again"
        )
    session = Session("opencode", info["id"], str(info.get("directory") or ""))
    msg_dir = storage / "message" / info["id"]
    if not msg_dir.is_dir():
        return session
    for n, msg_file in enumerate(sorted(msg_dir.glob("*.json")), start=1):
        msg = _read_json(msg_file)
        if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
            continue
        times = msg.get("time") if isinstance(msg.get("time"), dict) else {}
        at = parse_time(times.get("created")) if isinstance(times, dict) else None
        parts_dir = storage / "part" / str(msg.get("id", msg_file.stem))
        texts: list[str] = []
        for part_file in sorted(parts_dir.glob("*.json")) if parts_dir.is_dir() else []:
            part = _read_json(part_file)
            if isinstance(part, dict) and part.get("type") == "text" and not part.get("synthetic"):
                texts.append(str(part.get("text") or ""))
        text = "\n".join(t for t in texts if t.strip()).strip()
        if at is not None and text:
            session.messages.append(Message(str(msg["role"]), text, at, n))
    return session


def read_opencode_db(path: Path) -> list[Session]:
    """Every top-level session of an OpenCode SQLite database, opened read-only.

    Raises:
        ImportSkip: not an OpenCode database, or unreadable (nothing of it is imported).
    """
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ImportSkip(
            f"cannot open the OpenCode database ({exc}): check the file's permissions and "
            "run the import again"
        ) from None
    try:
        sessions = db.execute(
            "SELECT id, directory, time_created FROM session WHERE parent_id IS NULL "
            "ORDER BY time_created, id"
        ).fetchall()
        out: list[Session] = []
        for ses_id, directory, _created in sessions:
            session = Session("opencode", str(ses_id), str(directory or ""))
            texts: dict[str, list[str]] = {}
            for message_id, raw in db.execute(
                "SELECT message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id",
                (ses_id,),
            ):
                part = json.loads(raw)
                if (
                    isinstance(part, dict)
                    and part.get("type") == "text"
                    and not part.get("synthetic")
                ):
                    texts.setdefault(str(message_id), []).append(str(part.get("text") or ""))
            rows = db.execute(
                "SELECT id, time_created, data FROM message WHERE session_id = ? "
                "ORDER BY time_created, id",
                (ses_id,),
            ).fetchall()
            for n, (message_id, created, raw) in enumerate(rows, start=1):
                info = json.loads(raw)
                role = info.get("role") if isinstance(info, dict) else None
                at = parse_time(created)
                text = "\n".join(t for t in texts.get(str(message_id), []) if t.strip()).strip()
                if role in ("user", "assistant") and at is not None and text:
                    session.messages.append(Message(str(role), text, at, n))
            out.append(session)
        return out
    except (sqlite3.Error, json.JSONDecodeError) as exc:
        raise ImportSkip(
            f"not a readable OpenCode database ({exc}): check it is OpenCode's own database "
            "and not a copy cut short, then run the import again"
        ) from None
    finally:
        db.close()
