"""Codex rollout transcripts (``$CODEX_HOME/sessions/…/rollout-*.jsonl``): fill and digest."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from nika_tui.domain.context_fill import CODEX_DEFAULT_WINDOW, fill_percent
from nika_tui.services.transcripts.common import (
    ContextFill,
    TranscriptDigest,
    TranscriptFormat,
    as_int,
    parse_ts,
    short_text,
    touch_file,
)

_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$")


def codex_fill(records: list[dict[str, Any]]) -> ContextFill | None:
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
                at=parse_ts(rec.get("timestamp")),
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
        tokens = as_int(usage.get("total_tokens")) or (
            as_int(usage.get("input_tokens")) + as_int(usage.get("output_tokens"))
        )
        window = as_int(info.get("model_context_window")) or CODEX_DEFAULT_WINDOW
        return ContextFill(
            fill_percent(tokens, window),
            tokens,
            window,
            TranscriptFormat.CODEX,
            model=model,
            at=parse_ts(rec.get("timestamp")),
        )
    return None


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
        touch_file(digest, path, added, removed, at)


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
        at = parse_ts(rec.get("timestamp"))
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


def codex_digest(records: list[dict[str, Any]]) -> TranscriptDigest:
    digest = TranscriptDigest(TranscriptFormat.CODEX)
    users, agents = _codex_messages(records)
    digest.prompts = [(at, short_text(text)) for at, text in users]
    for at, text in agents:
        digest.last_assistant = text
        digest.decisions.extend((at, short_text(x)) for x in text.splitlines() if x.strip())
    for rec in records:
        payload = rec.get("payload")
        if not isinstance(payload, dict):
            continue
        at = parse_ts(rec.get("timestamp"))
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
                    (short_text(str(p.get("step", ""))), str(p.get("status", "pending")))
                    for p in plan
                    if isinstance(p, dict) and p.get("step")
                ]
    return digest
