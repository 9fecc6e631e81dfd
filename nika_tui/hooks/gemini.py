"""Gemini CLI hook events (``settings.json`` ``hooks``; payload on stdin, JSON answer on stdout).

Verified on Gemini CLI 0.61.0 (``nika_tui/services/gemini_sessions.py`` has the session format):

- ``SessionStart`` (``source`` startup | resume | clear) → the shared SessionStart context as
  ``hookSpecificOutput.additionalContext`` (Gemini CLI reads the same field as Claude Code;
  headless it prepends it to the prompt inside ``<hook_context>``).
- ``BeforeAgent`` (``prompt``, once per user turn, before the model is called) → what
  Claude Code's UserPromptSubmit gets (:func:`nika_tui.hooks.inject.prompt_context`): the
  prompt's own recall and, after a compression, this session's newest handoff packet, each
  shown once per session; then the user's words are captured (semantic). The prompt is
  cleaned of injected blocks first: headless Gemini CLI puts SessionStart's block inside it.
- ``AfterAgent`` (``prompt_response``) → the model's reply (episodic), read from the session
  file (the payload's text may repeat its last streamed chunk).
- ``PreCompress`` (``trigger`` manual | auto) → the handoff packet, but only for a compression
  that really runs: Gemini CLI fires ``auto`` before *every* turn and only then compares the
  context with its threshold, and even past it may find nothing to compress. So PreCompress
  only notes that a compression is due (past the threshold, or manual); the packet is built at
  the first later event whose session file shows the rewrite a compression leaves (a
  ``$set.messages`` carrying a ``<state_snapshot>``, after the offset noted).
- ``AfterTool`` (``tool_name``, ``tool_input``, ``tool_response``, after each tool call) →
  one ``tool_call`` billing entry, as Claude Code's PostToolUse (issue 18).
- ``SessionEnd``, ``Notification`` → bookkeeping.

Every event reads the fill from the session file (``tokens.input`` of the last answer over
Gemini CLI's window for the model).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from nika_tui.hooks.common import bookkeeping, capture_turn
from nika_tui.hooks.context import HookContext
from nika_tui.hooks.handoff import commit_compaction, pre_compact
from nika_tui.hooks.inject import strip_injected
from nika_tui.hooks.steps import capture_prompt, session_start
from nika_tui.services import redis_keys, wm_store
from nika_tui.services.gemini_sessions import (
    GeminiExchange,
    compression_due,
    compression_threshold,
    read_exchange,
    read_settings,
)

PENDING_TTL_S = 3600
EVENTS: tuple[str, ...] = (
    "SessionStart",
    "BeforeAgent",
    "AfterAgent",
    "PreCompress",
    "SessionEnd",
    "Notification",
    "AfterTool",
)

ANSWERS = frozenset(("SessionStart", "BeforeAgent"))
"""The events whose answer the CLI reads (it injects their context); the rest are deferred."""


def _read(ctx: HookContext, session_file: Path | None) -> GeminiExchange | None:
    if session_file is None:
        return None
    found: GeminiExchange | None = ctx.step("session_file", lambda: read_exchange(session_file))
    return found


def _record_fill(ctx: HookContext, exchange: GeminiExchange | None, session_file: Path) -> None:
    if exchange is None or exchange.fill is None:
        return
    fill = exchange.fill
    ctx.step(
        "fill",
        lambda: wm_store.record_fill(
            ctx.redis, ctx.tenant_id, fill, str(session_file), ctx.now, agent=ctx.agent_type
        ),
    )


def _session_start(ctx: HookContext, exchange: GeminiExchange | None) -> str:
    return session_start(ctx)


def _before_agent(ctx: HookContext, exchange: GeminiExchange | None) -> str:
    # The user's own words: headless Gemini CLI puts SessionStart's block inside the prompt.
    ctx.payload["prompt"] = strip_injected(str(ctx.payload.get("prompt") or ""))
    # Claude Code's UserPromptSubmit, under Gemini CLI's event name: the recall for the prompt
    # (shown once per session), then the capture.
    return capture_prompt(ctx, "BeforeAgent")


def _after_agent(ctx: HookContext, exchange: GeminiExchange | None) -> str:
    reply = exchange.last_reply if exchange and exchange.last_reply else None
    if reply is None:
        raw = ctx.payload.get("prompt_response")
        reply = raw if isinstance(raw, str) else None
    return capture_turn(ctx, reply)


def _pending_key(ctx: HookContext) -> str:
    return redis_keys.tenant_key(ctx.tenant_id, f"gemini:compress-pending:{ctx.session_id}")


def _pre_compress(ctx: HookContext, exchange: GeminiExchange | None) -> str:
    threshold = compression_threshold(read_settings(ctx.env.get("GEMINI_CLI_HOME")))
    manual = ctx.payload.get("trigger") == "manual"
    if not manual and not compression_due(exchange.fill if exchange else None, threshold):
        ctx.notes.append(f"PreCompress auto below {threshold:.0%}: no compression, no packet")
    elif ctx.session_id and exchange is not None:
        # Gemini CLI may still find nothing to compress (a history too short to split): the
        # packet waits until the session file shows the compression (see _confirm).
        pending = json.dumps({"offset": exchange.size, "trigger": ctx.payload.get("trigger")})
        ctx.step("pending", lambda: ctx.redis.set(_pending_key(ctx), pending, ex=PENDING_TTL_S))
        ctx.notes.append("compression due: the packet follows once the session file shows it")
    bookkeeping(ctx)
    return ""


def _confirm(ctx: HookContext, exchange: GeminiExchange | None) -> None:
    """The handoff packet, once the session file shows the compression a PreCompress announced."""
    if exchange is None or exchange.last_compression_at is None or not ctx.session_id:
        return
    raw = ctx.step("pending_read", lambda: ctx.redis.get(_pending_key(ctx)))
    if not raw:
        return
    pending = json.loads(str(raw))
    if exchange.last_compression_at < int(pending.get("offset") or 0):
        return
    ctx.step("pending_clear", lambda: ctx.redis.delete(_pending_key(ctx)))
    event, trigger = ctx.event, ctx.payload.get("trigger")
    # The packet, its Redis copy and the compaction record, under Claude Code's event name.
    ctx.event, ctx.payload["trigger"] = "PreCompact", pending.get("trigger") or "auto"
    pre_compact(ctx)
    # The session file shows the compression happened: commit the packet at once (ingested,
    # the session's newest, the compaction counted) — Gemini CLI has no PostCompact.
    commit_compaction(ctx)
    ctx.event = event
    if trigger is None:
        ctx.payload.pop("trigger", None)
    else:
        ctx.payload["trigger"] = trigger


def _after_tool(ctx: HookContext, exchange: GeminiExchange | None) -> str:
    from nika_tui.billing.hooks import bill_tool_call

    ctx.step("billing_tool", lambda: bill_tool_call(ctx))  # every tool call is billed
    bookkeeping(ctx)
    return ""


def _bookkeeping(ctx: HookContext, exchange: GeminiExchange | None) -> str:
    bookkeeping(ctx)
    return ""


HANDLERS: dict[str, Callable[[HookContext, GeminiExchange | None], str]] = {
    "SessionStart": _session_start,
    "BeforeAgent": _before_agent,
    "AfterAgent": _after_agent,
    "PreCompress": _pre_compress,
    "AfterTool": _after_tool,
}


def handle(ctx: HookContext) -> str:
    """Dispatch one Gemini CLI event; unknown events only get the bookkeeping."""
    session_file = ctx.transcript_path
    # The shared handlers read Claude / Codex transcripts; Gemini's session file is read here,
    # and its fill recorded first (a compaction record takes the latest fill).
    ctx.payload.pop("transcript_path", None)
    exchange = _read(ctx, session_file)
    if session_file is not None:
        _record_fill(ctx, exchange, session_file)
        from nika_tui.billing.hooks import bill_transcript

        # Billing and the daily token quota: the session file's new answers (issue 18).
        ctx.step("billing", lambda: bill_transcript(ctx, session_file))
    _confirm(ctx, exchange)
    return HANDLERS.get(ctx.event, _bookkeeping)(ctx, exchange)
