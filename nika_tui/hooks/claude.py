"""Claude Code hook events (settings.json ``hooks``; payload on stdin).

Installed events: SessionStart, UserPromptSubmit, PreCompact, PostCompact, Stop, SessionEnd,
Notification, PostToolUse (billing: one tool_call entry per call). SessionStart and
UserPromptSubmit may print ``hookSpecificOutput.additionalContext`` (see
:mod:`nika_tui.hooks.inject`); the others answer with nothing, which Claude Code reads as
"carry on".
"""

from __future__ import annotations

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


def _stop(ctx: HookContext) -> str:
    # Recent Claude Code versions send the closing message; older ones only the transcript.
    message = ctx.payload.get("last_assistant_message")
    return capture_turn(ctx, message if isinstance(message, str) else None)


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
