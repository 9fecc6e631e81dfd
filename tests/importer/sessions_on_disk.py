"""Session files written as each CLI writes them, for the importer's tests and benchmark.

The shapes follow the CLIs' own writers: Claude Code's JSONL (one line per user / assistant
message, ``sessionId``, ``cwd``, ``timestamp``, content blocks), Codex rollouts (the current
``{"timestamp","type","payload"}`` lines with ``session_meta``, ``response_item`` and
``event_msg``; the newest ``item_completed`` items; the 2025 header + bare items format),
Gemini CLI's ``chats/session-*.json`` and OpenCode's storage tree (session / message / part).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

Turn = tuple[str, str]
"""(user prompt, agent's answer)."""


def _iso(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _write_jsonl(path: Path, lines: Sequence[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def claude_session(
    root: Path, session_id: str, cwd: str, start: datetime, turns: Sequence[Turn]
) -> Path:
    """``root/-<cwd>/<session>.jsonl`` as Claude Code writes it."""
    lines: list[dict[str, Any]] = [{"type": "summary", "summary": "work", "leafUuid": "x"}]
    at = start
    parent = None
    for n, (prompt, answer) in enumerate(turns):
        base = {
            "isSidechain": False,
            "userType": "external",
            "cwd": cwd,
            "sessionId": session_id,
            "version": "2.0.14",
            "gitBranch": "main",
        }
        uid = f"{session_id[:8]}-u{n}"
        lines.append(
            {
                **base,
                "parentUuid": parent,
                "type": "user",
                "uuid": uid,
                "timestamp": _iso(at),
                "message": {"role": "user", "content": prompt},
            }
        )
        at += timedelta(seconds=20)
        aid = f"{session_id[:8]}-a{n}"
        lines.append(
            {
                **base,
                "parentUuid": uid,
                "type": "assistant",
                "uuid": aid,
                "timestamp": _iso(at),
                "requestId": f"req_{n}",
                "message": {
                    "id": f"msg_{n}",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5-20250929",
                    "content": [{"type": "text", "text": answer}],
                    "usage": {"input_tokens": 4, "output_tokens": 50},
                },
            }
        )
        lines.append(
            {
                **base,
                "parentUuid": aid,
                "type": "user",
                "uuid": f"{uid}-t",
                "timestamp": _iso(at),
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}],
                },
            }
        )
        parent = aid
        at += timedelta(minutes=2)
    folder = root / ("-" + cwd.strip("/").replace("/", "-"))
    return _write_jsonl(folder / f"{session_id}.jsonl", lines)


# Per role: the response item's content type, the ``item_completed`` item type, its id prefix
# and content type (Codex 0.171 writes ``Text`` for an answer), and the legacy event.
_CODEX_ROLES = {
    "user": ("input_text", "UserMessage", "u", "text", "user_message"),
    "assistant": ("output_text", "AgentMessage", "a", "Text", "agent_message"),
}


def _codex_message(at: str, n: int, role: str, text: str, items: bool) -> list[dict[str, Any]]:
    """One turn's message of a rollout: the response item, then the newest ``item_completed``
    event (``items``) or the older ``user_message`` / ``agent_message`` event."""
    content_type, item_type, prefix, item_content, legacy = _CODEX_ROLES[role]
    message = {"type": "message", "role": role, "content": [{"type": content_type, "text": text}]}
    if items:
        item = {
            "type": item_type,
            "id": f"{prefix}{n}",
            "content": [{"type": item_content, "text": text}],
        }
        event = {"type": "item_completed", "turn_id": f"t{n}", "item": item}
    else:
        event = {"type": legacy, "message": text, **({"images": []} if role == "user" else {})}
    return [
        {"timestamp": at, "type": "response_item", "payload": message},
        {"timestamp": at, "type": "event_msg", "payload": event},
    ]


def codex_rollout(
    root: Path,
    session_id: str,
    cwd: str,
    start: datetime,
    turns: Sequence[Turn],
    items: bool = False,
) -> Path:
    """``root/YYYY/MM/DD/rollout-…-<id>.jsonl``; ``items``: the newest ``item_completed``."""
    meta = {
        "id": session_id,
        "timestamp": _iso(start),
        "cwd": cwd,
        "originator": "codex_cli_rs",
        "cli_version": "0.63.0",
        "instructions": None,
        "source": "cli",
    }
    lines: list[dict[str, Any]] = [
        {"timestamp": _iso(start), "type": "session_meta", "payload": meta},
        {
            "timestamp": _iso(start),
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "<environment_context>cwd</environment_context>"}
                ],
            },
        },
    ]
    at = start
    for n, (prompt, answer) in enumerate(turns):
        at += timedelta(seconds=30)
        lines += _codex_message(_iso(at), n, "user", prompt, items)
        at += timedelta(seconds=40)
        lines += _codex_message(_iso(at), n, "assistant", answer, items)
    day = root / f"{start:%Y}" / f"{start:%m}" / f"{start:%d}"
    return _write_jsonl(day / f"rollout-{start:%Y-%m-%dT%H-%M-%S}-{session_id}.jsonl", lines)


def codex_rollout_2025(root: Path, session_id: str, start: datetime, turns: Sequence[Turn]) -> Path:
    """The oldest rollout format: a header line, then bare response items (no timestamps)."""
    lines: list[dict[str, Any]] = [
        {"id": session_id, "timestamp": _iso(start), "instructions": None, "git": None}
    ]
    for prompt, answer in turns:
        lines.append(
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}
        )
        lines.append(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": answer}],
            }
        )
    return _write_jsonl(root / f"rollout-{start:%Y-%m-%d}-{session_id}.jsonl", lines)


def gemini_session(root: Path, session_id: str, start: datetime, turns: Sequence[Turn]) -> Path:
    """``root/<project hash>/chats/session-<time>-<id8>.json`` as Gemini CLI records it."""
    messages: list[dict[str, Any]] = []
    at = start
    for n, (prompt, answer) in enumerate(turns):
        messages.append({"id": f"u{n}", "timestamp": _iso(at), "type": "user", "content": prompt})
        at += timedelta(seconds=15)
        messages.append(
            {
                "id": f"g{n}",
                "timestamp": _iso(at),
                "type": "gemini",
                "content": answer,
                "thoughts": [],
                "model": "gemini-2.5-pro",
                "tokens": {"input": 900, "output": 60, "total": 960},
            }
        )
        messages.append(
            {"id": f"i{n}", "timestamp": _iso(at), "type": "info", "content": "Request cancelled."}
        )
        at += timedelta(minutes=1)
    data = {
        "sessionId": session_id,
        "projectHash": "ab" * 32,
        "startTime": _iso(start),
        "lastUpdated": _iso(at),
        "messages": messages,
    }
    path = root / ("ab" * 32) / "chats" / f"session-{start:%Y-%m-%dT%H-%M}-{session_id[:8]}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def opencode_session(
    storage: Path, session_id: str, cwd: str, start: datetime, turns: Sequence[Turn]
) -> Path:
    """``storage/session/<project>/<ses>.json`` plus its message and part files."""
    ms = int(start.timestamp() * 1000)
    info = {
        "id": session_id,
        "slug": "work",
        "version": "1.1.36",
        "projectID": "p0",
        "directory": cwd,
        "title": "work",
        "time": {"created": ms, "updated": ms},
    }
    path = storage / "session" / "p0" / f"{session_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(info), encoding="utf-8")
    for n, (prompt, answer) in enumerate(turns):
        for k, (role, text) in enumerate((("user", prompt), ("assistant", answer))):
            mid = f"msg_{session_id[-6:]}{n:04d}{k}"
            created = ms + (n * 2 + k) * 30_000
            msg = {"id": mid, "sessionID": session_id, "role": role, "time": {"created": created}}
            _put(storage / "message" / session_id / f"{mid}.json", msg)
            part = {
                "id": f"prt_{mid}",
                "sessionID": session_id,
                "messageID": mid,
                "type": "text",
                "text": text,
                "time": {"start": created},
            }
            _put(storage / "part" / mid / f"prt_{mid}.json", part)
    return path


def _put(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def gemini_session_jsonl(
    root: Path, session_id: str, start: datetime, turns: Sequence[Turn], subagent_of: str = ""
) -> Path:
    """``root/<hash>/chats/session-<time>-<id8>.jsonl`` as the current ChatRecordingService
    appends it: metadata line, message lines (the answer re-appended once complete, which
    replaces it in place), a ``$set`` update, and a rewound exchange (``$rewindTo``) that is
    no longer part of the conversation. ``subagent_of``: a sub-agent session nested under its
    parent's id."""
    meta: dict[str, Any] = {
        "sessionId": session_id,
        "projectHash": "cd" * 32,
        "startTime": _iso(start),
        "lastUpdated": _iso(start),
        "kind": "subagent" if subagent_of else "main",
    }
    lines: list[dict[str, Any]] = [meta]
    if not subagent_of:
        # Gemini CLI 0.61 opens a session with a "user" message of its own (the date, the OS,
        # the workspace), set through ``$set``; no person typed it.
        context = {
            "id": "ctx",
            "timestamp": _iso(start),
            "type": "user",
            "content": [
                {
                    "text": "<session_context>\nThis is the Gemini CLI. We are setting up the "
                    "context for our chat.\nToday's date is Monday, March 2, 2026.\nMy "
                    "operating system is: linux\n</session_context>"
                }
            ],
        }
        lines.append({"$set": {"messages": [context]}})
    at = start
    for n, (prompt, answer) in enumerate(turns):
        lines.append(
            {"id": f"u{n}", "timestamp": _iso(at), "type": "user", "content": [{"text": prompt}]}
        )
        at += timedelta(seconds=15)
        lines.append(
            {
                "id": f"g{n}",
                "timestamp": _iso(at),
                "type": "gemini",
                "content": "",
                "model": "gemini-2.5-pro",
            }
        )
        lines.append(
            {
                "id": f"g{n}",
                "timestamp": _iso(at),
                "type": "gemini",
                "content": answer,
                "model": "gemini-2.5-pro",
                "tokens": {"input": 900, "output": 60, "cached": 0, "total": 960},
            }
        )
        at += timedelta(minutes=1)
    lines.append(
        {
            "id": "u-undone",
            "timestamp": _iso(at),
            "type": "user",
            "content": "Actually delete the production database backups.",
        }
    )
    lines.append({"$rewindTo": "u-undone"})
    lines.append({"$set": {"lastUpdated": _iso(at), "summary": "work"}})
    chats = root / ("cd" * 32) / "chats"
    if subagent_of:
        return _write_jsonl(chats / subagent_of / f"{session_id}.jsonl", lines)
    # The CLI's own bookkeeping beside the chats (0.61 writes the project's path there).
    (root / ("cd" * 32)).mkdir(parents=True, exist_ok=True)
    (root / ("cd" * 32) / ".project_root").write_text("/w/acme-api", encoding="utf-8")
    return _write_jsonl(chats / f"session-{start:%Y-%m-%dT%H-%M}-{session_id[:8]}.jsonl", lines)


def opencode_db(
    data_dir: Path,
    sessions: Sequence[tuple[str, str, datetime, Sequence[Turn]]],
    child_of: str = "",
) -> Path:
    """``data_dir/opencode.db`` with OpenCode 1.2's tables (session, message, part; the
    columns its drizzle schema declares that a reader touches). ``child_of``: the last
    session is a sub-agent's (``parent_id`` set)."""
    path = data_dir / "opencode.db"
    data_dir.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    add_opencode_sessions(db, sessions, child_of)
    db.close()
    return path


def add_opencode_sessions(
    db: sqlite3.Connection,
    sessions: Sequence[tuple[str, str, datetime, Sequence[Turn]]],
    child_of: str = "",
) -> None:
    """Write sessions into an OpenCode database (see :func:`opencode_db`), committed."""
    db.executescript(
        "CREATE TABLE IF NOT EXISTS session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL,"
        " workspace_id TEXT, parent_id TEXT, slug TEXT NOT NULL, directory TEXT NOT NULL,"
        " title TEXT NOT NULL, version TEXT NOT NULL, time_created INTEGER NOT NULL,"
        " time_updated INTEGER NOT NULL);"
        "CREATE TABLE IF NOT EXISTS message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,"
        " time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);"
        "CREATE TABLE IF NOT EXISTS part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL,"
        " session_id TEXT NOT NULL, time_created INTEGER NOT NULL,"
        " time_updated INTEGER NOT NULL, data TEXT NOT NULL);"
    )
    for k, (ses, cwd, start, turns) in enumerate(sessions):
        ms = int(start.timestamp() * 1000)
        parent = child_of if child_of and k == len(sessions) - 1 else None
        db.execute(
            "INSERT INTO session VALUES (?,?,?,?,?,?,?,?,?,?)",
            (ses, "p0", None, parent, "work", cwd, "work", "1.2.6", ms, ms),
        )
        for n, (prompt, answer) in enumerate(turns):
            for j, (role, text) in enumerate((("user", prompt), ("assistant", answer))):
                mid = f"msg_{ses[-6:]}{n:04d}{j}"
                created = ms + (n * 2 + j) * 30_000
                db.execute(
                    "INSERT INTO message VALUES (?,?,?,?,?)",
                    (
                        mid,
                        ses,
                        created,
                        created,
                        json.dumps({"role": role, "time": {"created": created}}),
                    ),
                )
                db.execute(
                    "INSERT INTO part VALUES (?,?,?,?,?,?)",
                    (
                        f"prt_{mid}a",
                        mid,
                        ses,
                        created,
                        created,
                        json.dumps({"type": "text", "text": text}),
                    ),
                )
                db.execute(
                    "INSERT INTO part VALUES (?,?,?,?,?,?)",
                    (
                        f"prt_{mid}b",
                        mid,
                        ses,
                        created,
                        created,
                        json.dumps({"type": "text", "text": "<file>x</file>", "synthetic": True}),
                    ),
                )
    db.commit()
