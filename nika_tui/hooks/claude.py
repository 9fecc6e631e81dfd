"""Claude Code hook events (settings.json ``hooks``; payload on stdin).

Installed events: SessionStart, UserPromptSubmit, PreCompact, PostCompact, Stop, SessionEnd,
Notification, PostToolUse (billing: one tool_call entry per call). SessionStart and
UserPromptSubmit may print ``hookSpecificOutput.additionalContext`` (see
:mod:`nika_tui.hooks.inject`); the others answer with nothing, which Claude Code reads as
"carry on".
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from nika_tui.hooks.common import bookkeeping_only, capture_turn
from nika_tui.hooks.context import HookContext
from nika_tui.hooks.handoff import post_compact, pre_compact, session_end
from nika_tui.hooks.steps import capture_prompt, session_start

EVENTS: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PreCompact",
    "Stop",
    "PostCompact",
    "SessionEnd",
    "Notification",
    "PostToolUse",
)

ANSWERS = frozenset(("SessionStart", "UserPromptSubmit"))
"""The events whose answer the CLI reads (it injects their context); the rest are deferred."""


TRANSCRIPT_WAIT_S = 1.5
"""How long Stop waits for the transcript to hold the closing message it was sent."""
_TRANSCRIPT_POLL_S = 0.02
_TAIL_BYTES = 256 * 1024
_NEEDLE_CHARS = 80


def _stop(ctx: HookContext) -> str:
    # Recent Claude Code versions send the closing message; older ones only the transcript.
    message = ctx.payload.get("last_assistant_message")
    if isinstance(message, str) and message.strip():
        ctx.step("transcript_wait", lambda: _await_closing_message(ctx, message))
    return capture_turn(ctx, message if isinstance(message, str) else None)


def _await_closing_message(ctx: HookContext, message: str) -> None:
    """Wait (bounded) until the transcript holds the turn's closing message.

    Interactive Claude Code 2.1.197 may run Stop before it appends that assistant line, whose
    usage is the context's fill: read then, the kernel's fill stayed at the previous turn's
    (0 tokens after a first turn) until the next hook. Stop is deferred whole (the agent
    waits for no answer), so through the hook server the wait costs the agent nothing.
    """
    path = ctx.transcript_path
    if path is None:
        return
    # The transcript is JSON lines: the message's start as it appears there, escaped.
    needle = json.dumps(message.strip()[:_NEEDLE_CHARS], ensure_ascii=False)[1:-1].encode()
    deadline = time.monotonic() + TRANSCRIPT_WAIT_S
    while True:
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - _TAIL_BYTES))
            if needle in fh.read():
                return
        if time.monotonic() > deadline:
            ctx.notes.append("transcript without the closing message: fill read without it")
            return
        time.sleep(_TRANSCRIPT_POLL_S)


def _post_tool_use(ctx: HookContext) -> str:
    from nika_tui.billing.hooks import bill_tool_call

    ctx.step("billing_tool", lambda: bill_tool_call(ctx))  # every tool call is billed
    return bookkeeping_only(ctx)


HANDLERS: dict[str, Callable[[HookContext], str]] = {
    "SessionStart": session_start,
    "UserPromptSubmit": capture_prompt,
    "PreCompact": pre_compact,
    "Stop": _stop,
    "PostCompact": post_compact,
    "SessionEnd": session_end,
    "Notification": bookkeeping_only,
    "PostToolUse": _post_tool_use,
}


def handle(ctx: HookContext) -> str:
    """Dispatch one Claude Code event; unknown events only get the bookkeeping."""
    return HANDLERS.get(ctx.event, bookkeeping_only)(ctx)
