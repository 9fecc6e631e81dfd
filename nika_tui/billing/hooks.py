"""The hooks' side of billing: bill the transcript's new usage, record tool calls.

Kept out of :mod:`nika_tui.hooks.common` so that a hook run pays only for what it uses; imports
no torch, qdrant or textual (hooks must stay fast).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nika_tui.billing.collect import collect_transcript, record_tool_call

if TYPE_CHECKING:
    from pathlib import Path

    from nika_tui.hooks.context import HookContext


def _meta(ctx: HookContext) -> dict[str, Any]:
    from nika_tui.domain.envelope import ActionType, Domain
    from nika_tui.hooks.common import make_meta

    meta = make_meta(ctx, None, action_type=ActionType.SYSTEM, domain=Domain.HOOKS)
    return meta.model_dump(mode="json", exclude_none=True, exclude_defaults=True)


def bill_transcript(ctx: HookContext, transcript: Path | None = None) -> int:
    """Bill the new usage lines of the event's transcript; return how many records."""
    path = transcript or ctx.transcript_path
    if path is None or not ctx.configured:  # no billing dir for an unknown tenant
        return 0
    entries = collect_transcript(ctx.tenant_id, path, _meta(ctx), ctx.now, ctx.redis, ctx.roots)
    return len(entries)


def bill_tool_call(ctx: HookContext) -> None:
    """One ``tool_call`` entry for a finished tool call (``tool_name`` from the payload).

    The events: Claude Code's and Codex's ``PostToolUse``, Gemini CLI's ``AfterTool`` and
    the ``PostToolUse`` nika's OpenCode plugin sends from ``tool.execute.after``; all name
    the tool ``tool_name``. The source says which CLI and event (``gemini AfterTool``).
    """
    if not ctx.configured:  # no billing dir for an unknown tenant
        return
    tool = str(ctx.payload.get("tool_name") or "unknown")
    record_tool_call(ctx.tenant_id, tool, f"{ctx.cli} {ctx.event}", _meta(ctx), ctx.now, ctx.roots)


def bill_opencode_answers(ctx: HookContext) -> int:
    """Bill the answers OpenCode finished since the last ``Stop`` (the plugin's ``usage``)."""
    from nika_tui.billing.collect import collect_usages
    from nika_tui.billing.usage import opencode_usages

    answers = ctx.payload.get("usage")
    if not ctx.configured or not isinstance(answers, list):
        return 0
    usages = opencode_usages(answers, ctx.now.isoformat())
    key = f"opencode:{ctx.session_id or 'unknown'}"
    entries = collect_usages(
        ctx.tenant_id, key, usages, "opencode plugin", _meta(ctx), ctx.now, ctx.redis, ctx.roots
    )
    return len(entries)
