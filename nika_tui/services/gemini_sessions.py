"""Gemini CLI session files: the context fill, the last exchange, whether a compression is due.

Gemini CLI (verified 0.61.0) records each session as JSON lines under
``$GEMINI_CLI_HOME/.gemini/tmp/{project}/chats/session-{date}-{id8}.jsonl`` (the hook payload's
``transcript_path``): a header line (``sessionId``, ``startTime``, ``kind``), message lines
(``id``, ``timestamp``, ``type`` ``user`` | ``gemini`` | ``info`` …, ``content``; a ``gemini``
line carries ``tokens.input`` — the prompt tokens of that request, i.e. the context — and
``model``) and ``{"$set": {...}}`` lines that update the header or rewrite ``messages`` (a
rewrite after a compression replaces the history, so its token counts are gone until the next
answer).

The window is Gemini CLI's own ``tokenLimit(model)``: 1,048,576 tokens for the Gemini models,
256,000 for the Gemma 4 ones. A compression runs when the last prompt's tokens reach
``model.compressionThreshold`` (settings; 0.5 by default) of that window.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from nika_tui.domain.context_fill import fill_percent
from nika_tui.errors import TranscriptError
from nika_tui.services.transcripts.common import ContextFill, TranscriptFormat

GEMINI_WINDOW = 1_048_576
GEMMA_4_WINDOW = 256_000
DEFAULT_COMPRESSION_THRESHOLD = 0.5
"""Gemini CLI's default ``model.compressionThreshold`` (fraction of the window)."""
TAIL_BYTES = 512 * 1024


def gemini_window(model: str) -> int:
    """Gemini CLI's ``tokenLimit(model)``."""
    return GEMMA_4_WINDOW if model.lower().startswith("gemma-4") else GEMINI_WINDOW


@dataclass(frozen=True, slots=True)
class GeminiExchange:
    """What the tail of a session file says."""

    fill: ContextFill | None
    last_user: str
    last_reply: str
    size: int = 0
    """The file's size when read (an offset later reads compare with)."""
    last_compression_at: int | None = None
    """Byte offset of the last history rewrite that carries a ``<state_snapshot>`` (what a
    compression writes), when one is in the part read."""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _parse_ts(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _records(path: Path, max_bytes: int) -> tuple[list[tuple[int, dict[str, Any]]], int]:
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, 2)
            start = max(0, size - max_bytes)
            fh.seek(start)
            raw = fh.read()
    except OSError as exc:
        raise TranscriptError(
            f"cannot read the Gemini session {path}: {exc.strerror}",
            "check the file exists",
        ) from exc
    out: list[tuple[int, dict[str, Any]]] = []
    offset = start
    for index, line in enumerate(raw.split(b"\n")):
        at, offset = offset, offset + len(line) + 1
        if start and index == 0:
            continue  # the first line of a tail is torn
        try:
            obj = json.loads(line)
        except ValueError:
            continue  # a torn last line, or a line we cannot read
        if isinstance(obj, dict):
            out.append((at, obj))
    return out, size


def read_exchange(path: Path | str, max_bytes: int = TAIL_BYTES) -> GeminiExchange:
    """The fill and the last user / model texts of a Gemini CLI session file.

    Raises:
        TranscriptError: the file cannot be read.
    """
    records, size = _records(Path(path), max_bytes)
    fill: ContextFill | None = None
    last_user = last_reply = ""
    compressed_at: int | None = None
    for at, rec in records:
        messages: list[Any]
        if isinstance(rec.get("$set"), dict) and isinstance(rec["$set"].get("messages"), list):
            # A rewrite of the history (start, or after a compression): earlier usage is gone.
            messages = rec["$set"]["messages"]
            fill = None
            if "<state_snapshot>" in json.dumps(messages):
                compressed_at = at
        elif "type" in rec and "content" in rec:
            messages = [rec]
        else:
            continue
        for msg in messages:
            if not isinstance(msg, dict):
                continue
            kind = msg.get("type")
            if kind == "user":
                last_user = _text(msg.get("content")) or last_user
            elif kind == "gemini":
                reply = _text(msg.get("content"))
                last_reply = reply or last_reply
                tokens = msg.get("tokens")
                if isinstance(tokens, dict) and isinstance(tokens.get("input"), int):
                    model = str(msg.get("model") or "")
                    window = gemini_window(model)
                    used = int(tokens["input"])
                    fill = ContextFill(
                        fill_percent=fill_percent(used, window),
                        tokens=used,
                        window=window,
                        format=TranscriptFormat.GEMINI_CLI,
                        model=model,
                        at=_parse_ts(msg.get("timestamp")),
                    )
    return GeminiExchange(fill, last_user, last_reply, size, compressed_at)


def compression_threshold(settings: Mapping[str, Any]) -> float:
    """``model.compressionThreshold`` of a settings object (Gemini CLI's default when absent)."""
    model = settings.get("model")
    value = model.get("compressionThreshold") if isinstance(model, dict) else None
    if isinstance(value, int | float) and 0 < value <= 1:
        return float(value)
    return DEFAULT_COMPRESSION_THRESHOLD


def read_settings(gemini_home: Path | str | None) -> dict[str, Any]:
    """``{GEMINI_CLI_HOME}/.gemini/settings.json`` as an object ({} when absent or unreadable)."""
    if not gemini_home:
        return {}
    try:
        data = json.loads((Path(gemini_home) / ".gemini" / "settings.json").read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def compression_due(fill: ContextFill | None, threshold: float) -> bool:
    """True when Gemini CLI's automatic compression will run (the prompt reached the threshold).

    Gemini CLI fires ``PreCompress`` (trigger ``auto``) before *every* turn and only then
    compares the last prompt's tokens with the threshold; this is that comparison.
    """
    return fill is not None and fill.tokens >= threshold * fill.window
