"""The hook steps that combine recall injection with capture: SessionStart (the handoff
packet and project digest, after committing a compaction) and UserPromptSubmit (recall for
the prompt, then keep it). They sit above :mod:`.common`, :mod:`.inject` and :mod:`.handoff`,
which import only :mod:`.common`, so the three no longer import each other back.
"""

from __future__ import annotations

from nika_tui.domain.memory import Layer
from nika_tui.hooks import bridge_turn, inject
from nika_tui.hooks.common import bookkeeping, digest_of, make_meta, remember, worth_keeping_prompt
from nika_tui.hooks.context import HookContext, preview
from nika_tui.hooks.handoff import commit_compaction


def session_start(ctx: HookContext, event_name: str = "SessionStart") -> str:
    """The handoff packet chosen by session and time and the project digest
    (:mod:`nika_tui.hooks.inject`); after a compaction, the pending packet is committed first."""
    if ctx.payload.get("source") == "compact":
        commit_compaction(ctx)
    output = inject.session_start_context(ctx, event_name)
    ctx.defer(lambda: bookkeeping(ctx))  # the agent waits for the answer only
    return output


def capture_prompt(
    ctx: HookContext, event_name: str = "UserPromptSubmit", recall: inject.RecallAsk | None = None
) -> str:
    """UserPromptSubmit: recall for the prompt (injected, see :mod:`nika_tui.hooks.inject`),
    then keep the prompt (semantic) with files and tools from the transcript.

    What a person states to the agent (facts, rules, decisions: "deploys happen on Fridays")
    is knowledge that must stay current, so it goes to the semantic layer, where a later
    contradiction supersedes it or reaches the review queue. What the agent did in a turn is
    history (episodic, :func:`capture_turn`); keeping the two in different layers also keeps a
    prompt and its own answer from being judged against each other.

    ``recall``: the prompt's recall when the caller sent it already
    (:func:`nika_tui.hooks.inject.send_prompt_recall`).
    """
    prompt = str(ctx.payload.get("prompt") or "")
    # The recall runs first: the prompt being stored must not answer itself.
    output = inject.prompt_context(ctx, prompt, event_name, recall)
    # Claude Code sends the prompt once this returns: the capture runs after the answer.
    ctx.defer(lambda: keep_prompt(ctx, prompt))
    return output


def keep_prompt(ctx: HookContext, prompt: str) -> None:
    """Keep a prompt worth keeping (semantic, see :func:`capture_prompt`), then bookkeeping."""
    if worth_keeping_prompt(prompt):
        digest = digest_of(ctx)
        meta = make_meta(ctx, digest)
        # A prompt the bridge typed for a person on a gateway carries that turn's envelope.
        meta = ctx.step("bridge", lambda: bridge_turn.prompt_meta(ctx, prompt, meta)) or meta
        key = ctx.step("remember", lambda: remember(ctx, prompt, Layer.SEMANTIC, meta))
        if key:
            ctx.notes.append(f"captured prompt {preview(prompt)!r}")
    else:
        ctx.notes.append("prompt not kept (command, acknowledgement or too short)")
    bookkeeping(ctx)
