"""Reading a transcript of either format: its context fill and its digest."""

from __future__ import annotations

import os
from pathlib import Path

from nika_tui.domain.context_fill import CODEX_DEFAULT_WINDOW, claude_window
from nika_tui.errors import TranscriptError
from nika_tui.services.transcripts.claude import claude_digest, claude_fill
from nika_tui.services.transcripts.codex import codex_digest, codex_fill
from nika_tui.services.transcripts.common import (
    DIGEST_TAIL_BYTES,
    FIRST_TAIL_BYTES,
    ContextFill,
    TranscriptDigest,
    TranscriptFormat,
    detect_format,
    read_tail,
)


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
        records, whole = read_tail(p, budget)
        fmt = fmt or detect_format(records)
        if fmt is TranscriptFormat.CLAUDE_CODE:
            found = claude_fill(records, model, disable_1m)
        elif fmt is TranscriptFormat.CODEX:
            found = codex_fill(records)
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


def read_digest(path: Path | str, max_bytes: int = DIGEST_TAIL_BYTES) -> TranscriptDigest:
    """Files, tools, decisions, tasks and prompts from the tail of a transcript.

    Raises:
        TranscriptError: The file cannot be read or is neither format.
    """
    p = Path(path)
    if not p.is_file():
        raise TranscriptError(f"no transcript at {p}", "give the path of a .jsonl transcript file")
    records, _ = read_tail(p, max_bytes)
    fmt = detect_format(records)
    if fmt is TranscriptFormat.CLAUDE_CODE:
        return claude_digest(records)
    if fmt is TranscriptFormat.CODEX:
        return codex_digest(records)
    raise TranscriptError(
        f"{p} is not a Claude Code or Codex transcript",
        "give a Claude Code session .jsonl or a Codex rollout-*.jsonl file",
    )
