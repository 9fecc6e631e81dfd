"""Claude Code JSONL transcripts (``~/.claude/projects/<cwd>/<session>.jsonl``): fill and digest."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from nika_tui.domain.context_fill import claude_window, fill_percent
from nika_tui.services.transcripts.common import (
    ContextFill,
    TranscriptDigest,
    TranscriptFormat,
    as_int,
    count_lines,
    parse_ts,
    short_text,
    touch_file,
)

_CLAUDE_EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})


def claude_fill(
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
                at=parse_ts(rec.get("timestamp")),
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
            as_int(usage.get("input_tokens"))
            + as_int(usage.get("cache_creation_input_tokens"))
            + as_int(usage.get("cache_read_input_tokens"))
        )
        window = claude_window(model_hint or model, tokens, disable_1m)
        return ContextFill(
            fill_percent(tokens, window),
            tokens,
            window,
            TranscriptFormat.CLAUDE_CODE,
            model=model_hint or model,
            at=parse_ts(rec.get("timestamp")),
        )
    return None


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
            touch_file(digest, path, count_lines(args.get("content")), 0, at)
        elif name == "MultiEdit" and isinstance(args.get("edits"), list):
            added = sum(
                count_lines(e.get("new_string")) for e in args["edits"] if isinstance(e, dict)
            )
            removed = sum(
                count_lines(e.get("old_string")) for e in args["edits"] if isinstance(e, dict)
            )
            touch_file(digest, path, added, removed, at)
        else:
            touch_file(
                digest,
                path,
                count_lines(args.get("new_string") or args.get("new_source")),
                count_lines(args.get("old_string")),
                at,
            )
    elif name == "TodoWrite" and isinstance(args.get("todos"), list):
        digest.todos = [
            (short_text(str(t.get("content", ""))), str(t.get("status", "pending")))
            for t in args["todos"]
            if isinstance(t, dict) and t.get("content")
        ]


def claude_digest(records: list[dict[str, Any]]) -> TranscriptDigest:
    digest = TranscriptDigest(TranscriptFormat.CLAUDE_CODE)
    for rec in records:
        if rec.get("isSidechain"):
            continue  # a subagent's own work is summarised by its parent's tool result
        digest.session_id = str(rec.get("sessionId") or digest.session_id)
        digest.cwd = str(rec.get("cwd") or digest.cwd)
        msg = rec.get("message")
        if not isinstance(msg, dict):
            continue
        at = parse_ts(rec.get("timestamp"))
        content = msg.get("content")
        if rec.get("type") == "user":
            if rec.get("isCompactSummary") or rec.get("isMeta"):
                continue
            if isinstance(content, str) and content.strip():
                digest.prompts.append((at, short_text(content)))
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
                        digest.decisions.append((at, short_text(line)))
    return digest
