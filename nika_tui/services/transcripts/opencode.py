"""OpenCode's sessions as a handoff digest, read from OpenCode's own SQLite database.

OpenCode (verified 1.18.33) writes no transcript file: every session lives in
``$XDG_DATA_HOME/opencode/opencode.db`` (the importer's reader,
:func:`nika_tui.importer.sessions.read_opencode_db`, describes the tables). For one session,
opened read-only and never written:

- ``message`` (``data.role``; an assistant ``data.summary`` is OpenCode's own compaction
  summary, left out) and its ``part`` rows: a user message's ``text`` parts that are not
  ``synthetic`` are the person's prompt (OpenCode's "Continue…" turn after a compaction is
  synthetic, its compaction request a ``compaction`` part); an assistant's ``text`` parts are
  its decisions; its ``tool`` parts (``tool``, ``state.status`` completed, ``state.input``)
  count the tools, and ``write`` / ``edit`` / ``multiedit`` name the file (``filePath``), with
  the lines from ``state.metadata.filediff`` (``additions`` / ``deletions``) or the input;
  a ``patch`` part lists the files it changed (``files``);
- ``todo`` (``content``, ``status``, ``position``): the session's latest todo list (without
  that table, the last ``todowrite`` call's ``todos``).

Only the newest :data:`MAX_MESSAGES` messages are read, and a part's JSON is cut to the fields
used inside SQLite (a tool's output, a whole file, never reaches Python).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nika_tui.errors import TranscriptError
from nika_tui.services.transcripts.common import (
    TranscriptDigest,
    TranscriptFormat,
    count_lines,
    short_text,
    touch_file,
)

DATABASE = "opencode.db"
MAX_MESSAGES = 300
BUSY_TIMEOUT_S = 1.0
"""OpenCode writes in WAL mode, which never blocks a reader; this bounds a locked file."""
_EDIT_TOOLS = frozenset({"write", "edit", "multiedit"})

if TYPE_CHECKING:
    import sqlite3

_PARTS = """
SELECT message_id, json_extract(data, '$.type'), json_extract(data, '$.text'),
       json_extract(data, '$.synthetic'), json_extract(data, '$.tool'),
       json_extract(data, '$.state.status'), json_extract(data, '$.state.input'),
       json_extract(data, '$.state.metadata.filediff.additions'),
       json_extract(data, '$.state.metadata.filediff.deletions'), json_extract(data, '$.files')
FROM part WHERE session_id = ? AND message_id IN ({marks}) ORDER BY message_id, id
"""


def opencode_database(home_env: Mapping[str, str]) -> Path | None:
    """OpenCode's sessions database as the process with ``home_env`` (its ``HOME`` /
    ``XDG_DATA_HOME``) sees it (None: none yet)."""
    home = Path(home_env.get("HOME") or Path.home())
    data = Path(home_env.get("XDG_DATA_HOME") or home / ".local" / "share")
    path = data / "opencode" / DATABASE
    return path if path.is_file() else None


def _at(ms: object) -> datetime | None:
    if not isinstance(ms, int | float) or isinstance(ms, bool):
        return None
    return datetime.fromtimestamp(ms / 1000.0, UTC)


def _json(raw: object) -> Any:
    try:
        return json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None


def _tool(digest: TranscriptDigest, row: tuple[Any, ...], at: datetime | None) -> None:
    tool, status, raw_input, additions, deletions = row[4], row[5], row[6], row[7], row[8]
    if not isinstance(tool, str) or not tool or status != "completed":
        return
    digest.tools[tool] = digest.tools.get(tool, 0) + 1
    args = _json(raw_input)
    if tool == "todowrite" and isinstance(args, dict) and isinstance(args.get("todos"), list):
        # The list as the agent last wrote it (the ``todo`` table, when there is one, wins).
        digest.todos = [
            (short_text(str(t["content"])), str(t.get("status") or "pending"))
            for t in args["todos"]
            if isinstance(t, dict) and t.get("content")
        ]
        return
    if tool not in _EDIT_TOOLS or not isinstance(args, dict):
        return
    path = args.get("filePath")
    if not isinstance(path, str) or not path:
        return
    if isinstance(additions, int) and isinstance(deletions, int):
        touch_file(digest, path, additions, deletions, at)
    elif tool == "write":
        touch_file(digest, path, count_lines(args.get("content")), 0, at)
    else:
        edits = args.get("edits") if tool == "multiedit" else [args]
        edits = [e for e in edits if isinstance(e, dict)] if isinstance(edits, list) else []
        added = sum(count_lines(e.get("newString")) for e in edits)
        removed = sum(count_lines(e.get("oldString")) for e in edits)
        touch_file(digest, path, added, removed, at)


def _message(
    digest: TranscriptDigest, info: Mapping[str, Any], rows: list[tuple[Any, ...]], at: Any
) -> None:
    when = _at(at)
    kinds = {row[1] for row in rows}
    if info.get("role") == "user":
        if "compaction" in kinds:
            return  # OpenCode's compaction request, not the person's words
        texts = [str(r[2]) for r in rows if r[1] == "text" and not r[3] and r[2]]
        prompt = "\n".join(t for t in texts if t.strip()).strip()
        if prompt:
            digest.prompts.append((when, short_text(prompt)))
        return
    if info.get("role") != "assistant" or info.get("summary"):
        return
    for row in rows:
        if row[1] == "tool":
            _tool(digest, row, when)
        elif row[1] == "patch":
            files = _json(row[9])
            for path in files if isinstance(files, list) else []:
                if isinstance(path, str) and path:
                    touch_file(digest, path, 0, 0, when)
        elif row[1] == "text" and not row[3] and isinstance(row[2], str) and row[2].strip():
            digest.last_assistant = row[2]
            digest.decisions += [(when, short_text(ln)) for ln in row[2].splitlines() if ln.strip()]


def _read(db: sqlite3.Connection, session_id: str, directory: str) -> TranscriptDigest | None:
    found = db.execute("SELECT directory FROM session WHERE id = ?", (session_id,)).fetchone()
    if found is None or (directory and str(found[0]) != directory):
        return None  # not this session (another directory's is another agent's)
    digest = TranscriptDigest(TranscriptFormat.OPENCODE, session_id=session_id, cwd=str(found[0]))
    messages = db.execute(
        "SELECT id, time_created, data FROM message WHERE session_id = ? "
        "ORDER BY time_created DESC, id DESC LIMIT ?",
        (session_id, MAX_MESSAGES),
    ).fetchall()[::-1]
    if messages:
        parts: dict[str, list[tuple[Any, ...]]] = {}
        query = _PARTS.format(marks=",".join("?" * len(messages)))
        for row in db.execute(query, (session_id, *[str(m[0]) for m in messages])):
            parts.setdefault(str(row[0]), []).append(tuple(row))
        for message_id, created, raw in messages:
            info = _json(raw)
            if isinstance(info, dict):
                _message(digest, info, parts.get(str(message_id), []), created)
    import sqlite3

    try:
        rows = db.execute(
            "SELECT content, status FROM todo WHERE session_id = ? ORDER BY position",
            (session_id,),
        ).fetchall()
    except sqlite3.OperationalError:
        return digest  # an OpenCode without the table: the last todowrite's list stands
    if rows:
        digest.todos = [(short_text(str(c)), str(st or "pending")) for c, st in rows if c]
    return digest


def opencode_digest(path: Path, session_id: str, directory: str = "") -> TranscriptDigest | None:
    """The handoff digest of one OpenCode session: prompts, decisions, files, tools, todos.

    Args:
        path: OpenCode's database (:func:`opencode_database`).
        session_id: the session (``ses_…``).
        directory: the session's directory as the caller knows it; a session of another
            directory is not read ("" reads any).

    Returns:
        The digest, or None when the database has no such session.

    Raises:
        TranscriptError: the file is not a readable OpenCode database.
    """
    import sqlite3  # here: every hook imports this module, few of them read a database

    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error as exc:
        raise TranscriptError(
            f"cannot open OpenCode's database {path} ({exc})", "check the file's permissions"
        ) from None
    try:
        return _read(db, session_id, directory)
    except sqlite3.Error as exc:
        raise TranscriptError(
            f"{path} is not a readable OpenCode database ({exc})",
            "check it is OpenCode's own opencode.db (OpenCode 1.2 or later)",
        ) from None
    finally:
        db.close()
