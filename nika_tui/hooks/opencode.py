"""OpenCode events, sent by nika's plugin (``nika_tui/assets/opencode_plugin.js``).

OpenCode (verified 1.18.33) has no command hooks; its plugins are JavaScript modules loaded
from ``{OPENCODE_CONFIG_DIR}/plugin/``. Ours runs ``nika hook opencode EVENT`` with a JSON
payload on stdin, named after Claude Code's events:

- ``UserPromptSubmit`` (plugin hook ``chat.message``, before the user message is saved and
  sent): on a session's first prompt the shared SessionStart digest (OpenCode has no
  session-start hook that can add context), then the prompt's own recall and the newest
  handoff packet, each shown once per session; then the prompt is captured (semantic). The
  answer's ``additionalContext`` becomes a synthetic text part of the user message.
- ``PreCompact`` (``experimental.session.compacting``, called only when a compaction runs,
  by OpenCode's overflow rule or the TUI's ``/compact``) → the handoff packet, committed at
  once. OpenCode writes no transcript file: the packet's prompts, decisions, files touched and
  todos come from the session in OpenCode's own SQLite database (read-only,
  :mod:`nika_tui.services.transcripts.opencode`); the plugin's payload gives the fill (the
  answer's usage over the model's window) and, when the database cannot be read, the last ask
  and the answer before the compaction.
- ``Stop`` (bus event ``session.idle``) → the reply (episodic) and the fill: the last answer's
  ``tokens`` (input + cache read + cache write) over ``context_window``, the model's
  ``limit.context`` that OpenCode passed to ``chat.params``; and billing: ``usage`` lists every
  answer finished since the previous idle (a turn with tool calls is several answers).
- ``PostToolUse`` (``tool.execute.after``, once per finished tool call: ``tool_name``,
  ``call_id``) → one ``tool_call`` billing entry, as Claude Code's PostToolUse (issue 18).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from nika_tui.domain.context_fill import fill_percent
from nika_tui.hooks import inject
from nika_tui.hooks.common import bookkeeping_only, capture_turn, session_digest
from nika_tui.hooks.context import HookContext
from nika_tui.hooks.handoff import commit_compaction, pre_compact
from nika_tui.hooks.inject import context_of, strip_injected
from nika_tui.hooks.steps import capture_prompt
from nika_tui.services import wm_store
from nika_tui.services.transcripts.common import ContextFill, TranscriptDigest, TranscriptFormat

EVENTS: tuple[str, ...] = ("UserPromptSubmit", "PreCompact", "Stop", "PostToolUse")
ANSWERS = frozenset(("UserPromptSubmit",))
"""The events whose answer the CLI reads (it injects their context); the rest are deferred."""
SESSION_STARTED = "session-start"
"""The mark a session's first prompt leaves in its shown set."""


def _user_prompt(ctx: HookContext) -> str:
    ctx.payload["prompt"] = strip_injected(str(ctx.payload.get("prompt") or ""))
    blocks: list[str] = []
    shown: set[str] = ctx.step("shown_read", lambda: inject.shown(ctx)) or set()
    recall: inject.RecallAsk | None = None
    if ctx.session_id and SESSION_STARTED not in shown:
        # OpenCode has no session-start hook that can add context: the first prompt brings it.
        # The prompt's recall is sent first and runs in the service beside the opening's
        # `recent`: the run waits for the slower of the two, not for both in turn.
        recall = inject.send_prompt_recall(ctx, str(ctx.payload["prompt"]))
        opening = inject.session_start_context(ctx, "UserPromptSubmit")
        ctx.step("shown", lambda: inject.mark_shown(ctx, [SESSION_STARTED]))
        blocks.append(context_of(opening))
    # The prompt's own recall (not what the opening showed), then the capture, deferred.
    blocks.append(context_of(capture_prompt(ctx, recall=recall)))
    text = "\n".join(b for b in blocks if b)
    if not text:
        return ""
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}},
        ensure_ascii=False,
    )


def _fill(ctx: HookContext) -> ContextFill | None:
    tokens = ctx.payload.get("tokens")
    window = ctx.payload.get("context_window")
    if not isinstance(tokens, dict) or not isinstance(window, int) or window <= 0:
        return None
    raw_cache = tokens.get("cache")
    cache: dict[str, Any] = raw_cache if isinstance(raw_cache, dict) else {}
    counts = (tokens.get("input"), cache.get("read"), cache.get("write"))
    used = sum(v for v in counts if isinstance(v, int))
    return ContextFill(
        fill_percent=fill_percent(used, window),
        tokens=used,
        window=window,
        format=TranscriptFormat.OPENCODE,
        model=str(ctx.payload.get("model") or ""),
        at=ctx.now,
    )


def _digest(ctx: HookContext) -> TranscriptDigest | None:
    """The session as OpenCode keeps it in its database (prompts, decisions, files touched,
    tools, todos: :func:`~nika_tui.hooks.common.session_digest`), else what the plugin saw of
    it: the last ask and the answer before the compaction."""
    prompt = ctx.payload.get("last_prompt")
    answer = ctx.payload.get("last_assistant_message")
    prompt = strip_injected(prompt).strip() if isinstance(prompt, str) else ""
    answer = answer.strip() if isinstance(answer, str) else ""
    stored = session_digest(ctx)
    if stored is not None and stored.prompts:
        return stored
    if not prompt and not answer:
        return stored
    return TranscriptDigest(
        format=TranscriptFormat.OPENCODE,
        session_id=ctx.session_id,
        prompts=[(ctx.now, prompt)] if prompt else [],
        decisions=[(ctx.now, answer)] if answer else [],
        last_assistant=answer,
    )


def _pre_compact(ctx: HookContext) -> str:
    """OpenCode calls its compacting hook only for a compaction that runs: keep the packet
    and commit it at once (there is no later event that confirms it)."""
    out = pre_compact(ctx, _digest(ctx), _fill(ctx))
    commit_compaction(ctx)
    return out


def _stop(ctx: HookContext) -> str:
    from nika_tui.billing.hooks import bill_opencode_answers

    # Billing and the daily token quota: every answer finished since the last idle (issue 18).
    ctx.step("billing", lambda: bill_opencode_answers(ctx))
    fill = _fill(ctx)
    if fill is not None:
        ctx.step(
            "fill",
            lambda: wm_store.record_fill(
                ctx.redis, ctx.tenant_id, fill, "opencode", ctx.now, agent=ctx.agent_type
            ),
        )
    message = ctx.payload.get("last_assistant_message")
    return capture_turn(ctx, message if isinstance(message, str) else None)


def _post_tool_use(ctx: HookContext) -> str:
    from nika_tui.billing.hooks import bill_tool_call

    ctx.step("billing_tool", lambda: bill_tool_call(ctx))  # every tool call is billed
    return bookkeeping_only(ctx)


HANDLERS: dict[str, Callable[[HookContext], str]] = {
    "UserPromptSubmit": _user_prompt,
    "PreCompact": _pre_compact,
    "Stop": _stop,
    "PostToolUse": _post_tool_use,
}


def handle(ctx: HookContext) -> str:
    """Dispatch one OpenCode event; unknown events only get the bookkeeping."""
    # The plugin sends no transcript path; a payload naming one is not OpenCode's.
    ctx.payload.pop("transcript_path", None)
    return HANDLERS.get(ctx.event, bookkeeping_only)(ctx)
