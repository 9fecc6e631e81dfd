"""What both transcript formats share: the result types, reading a growing file's tail, telling
the formats apart, and the small parsers the readers use.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from nika_tui.errors import TranscriptError

FIRST_TAIL_BYTES = 256 * 1024
DIGEST_TAIL_BYTES = 2 * 1024 * 1024
MAX_LINE_TEXT = 300
_CODEX_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)


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


def read_tail(path: Path, max_bytes: int) -> tuple[list[dict[str, Any]], bool]:
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


def parse_ts(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def as_int(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def short_text(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_LINE_TEXT else text[: MAX_LINE_TEXT - 1] + "…"


def count_lines(text: Any) -> int:
    return len(str(text).splitlines()) if text else 0


def touch_file(
    digest: TranscriptDigest, path: str, added: int, removed: int, at: datetime | None
) -> None:
    touch = digest.files.setdefault(path, FileTouch())
    touch.edits += 1
    touch.added += added
    touch.removed += removed
    touch.last_at = at or touch.last_at
