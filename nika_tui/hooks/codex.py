"""Codex hook events: its ``hooks.json`` (same shape and names as Claude Code's, payload on
stdin) and its ``notify`` program (``agent-turn-complete`` JSON as the last argument).

``notify`` carries no transcript path: the rollout is found by thread id under
``$CODEX_HOME/sessions/YYYY/MM/DD/`` (today and yesterday only, so the hook stays fast).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from nika_tui.hooks.common import bookkeeping, bookkeeping_only, capture_turn
from nika_tui.hooks.context import HookContext
from nika_tui.hooks.handoff import post_compact, pre_compact, session_end
from nika_tui.hooks.steps import capture_prompt, session_start

EVENTS: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PreCompact",
    "PostCompact",
    "Stop",
    "SessionEnd",
    "PostToolUse",
)
NOTIFY_EVENT = "notify"
ANSWERS = frozenset(("SessionStart", "UserPromptSubmit"))
"""The events whose answer the CLI reads (it injects their context); the rest are deferred."""


def find_rollout(ctx: HookContext, thread_id: str) -> Path | None:
    """The rollout file of a thread, looked up in the last two days' session folders."""
    home = ctx.env.get("CODEX_HOME")
    if not home or not thread_id or "/" in thread_id:
        return None
    for days in (0, 1):
        day = ctx.now - timedelta(days=days)
        folder = Path(home) / "sessions" / f"{day:%Y}" / f"{day:%m}" / f"{day:%d}"
        matches = sorted(folder.glob(f"rollout-*{thread_id}.jsonl")) if folder.is_dir() else []
        if matches:
            return matches[-1]
    return None


def _stop(ctx: HookContext) -> str:
    message = ctx.payload.get("last_assistant_message")
    return capture_turn(ctx, message if isinstance(message, str) else None)


def _notify(ctx: HookContext) -> str:
    if ctx.payload.get("type") != "agent-turn-complete":
        bookkeeping(ctx, "Notification")
        return ""
    message = ctx.payload.get("last-assistant-message")
    rollout = find_rollout(ctx, ctx.session_id)
    if rollout is None and ctx.env.get("CODEX_HOME"):
        # Codex also notifies for its internal threads (the title generation of a new
        # thread): they have their own thread id and no rollout file. Not a turn of ours.
        ctx.notes.append("notify for a thread without a rollout (internal): ignored")
        return ""
    # A finished turn leaves the agent waiting for input: the kernel goes idle, as on Stop.
    return capture_turn(
        ctx, message if isinstance(message, str) else None, kernel_event="Stop", transcript=rollout
    )


def _post_tool_use(ctx: HookContext) -> str:
    from nika_tui.billing.hooks import bill_tool_call

    ctx.step("billing_tool", lambda: bill_tool_call(ctx))  # every tool call is billed
    return bookkeeping_only(ctx)


HANDLERS: dict[str, Callable[[HookContext], str]] = {
    "SessionStart": session_start,
    "UserPromptSubmit": capture_prompt,
    "PreCompact": pre_compact,
    "PostCompact": post_compact,
    "Stop": _stop,
    "SessionEnd": session_end,
    "PostToolUse": _post_tool_use,
    NOTIFY_EVENT: _notify,
}


def handle(ctx: HookContext) -> str:
    """Dispatch one Codex event; unknown events only get the bookkeeping."""
    return HANDLERS.get(ctx.event, bookkeeping_only)(ctx)
