"""Per-prompt injection shared by the CLIs whose hook answers before each prompt.

Used by Gemini CLI's ``BeforeAgent`` and OpenCode's ``chat.message`` plugin hook (Claude Code's
``UserPromptSubmit`` can use it the same way). For one prompt it injects, at most once per agent
session:

- the newest handoff packet of this session, after a compaction (committed under
  ``handoff_latest(tenant, session)`` once the compaction happened, so "newest" is by
  construction);
- the recall for the prompt itself — only hits that passed PALACE (the service drops the rest)
  and that this session has not been shown yet.

What was shown is remembered in a Redis set per session (``…:injected:{session}``, 24 h TTL):
memory ids (their 8-character prefix, as :func:`nika_tui.hooks.common.hit_line` prints them) and
the packet's content hash. SessionStart's own block is scanned for the ids it showed, so a
memory injected at start is not injected again at the first prompt.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

from nika_tui.domain.handoff import HANDOFF_MARKER
from nika_tui.domain.handoff_select import StoredPacket
from nika_tui.domain.requests import RecallQuery, RecallResult
from nika_tui.hooks.common import hit_line, memory_client, note_hits, render_context
from nika_tui.hooks.context import HookContext
from nika_tui.services import redis_keys

HANDOFF_TITLE = "Handoff packet from before the compaction"
INJECTED_TTL_S = 24 * 3600
PROMPT_RECALL_LIMIT = 5
MAX_QUERY_CHARS = 1500
PROMPT_CONTEXT_BYTES = 6 * 1024
"""Per-prompt budget (SessionStart has 8 KB): this block is paid on every turn."""
_SHOWN_ID = re.compile(r"\bid ([0-9a-f]{8})\]")
# What hooks (ours and the CLI's own wrappers) put around injected context: never a user's words.
_INJECTED_BLOCKS = re.compile(
    r"<hook_context>.*?</hook_context>|<nika-memory\b.*?</nika-memory>", re.DOTALL | re.IGNORECASE
)


def injected_key(tenant_id: str, session_id: str) -> str:
    """The Redis set of what one session has been shown."""
    return redis_keys.tenant_key(tenant_id, f"injected:{session_id}")


def strip_injected(prompt: str) -> str:
    """The user's own words: the prompt without injected context blocks."""
    return _INJECTED_BLOCKS.sub("", prompt).strip()


def shown_ids(text: str) -> list[str]:
    """Memory ids (8-character prefixes) that a rendered context block shows."""
    return _SHOWN_ID.findall(text)


def already_shown(ctx: HookContext) -> set[str]:
    """What this session has been shown (empty without a session id)."""
    if not ctx.session_id:
        return set()
    members = ctx.redis.smembers(injected_key(ctx.tenant_id, ctx.session_id))
    return {str(m) for m in members}


def mark_shown(ctx: HookContext, items: Iterable[str]) -> None:
    """Remember that this session has been shown ``items``."""
    values = [i for i in items if i]
    if not values or not ctx.session_id:
        return
    key = injected_key(ctx.tenant_id, ctx.session_id)
    pipe = ctx.redis.pipeline(transaction=False)
    pipe.sadd(key, *values)
    pipe.expire(key, INJECTED_TTL_S)
    pipe.execute()


def packet_mark(text: str) -> str:
    """The mark a shown handoff packet leaves in the session's set."""
    return "handoff:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def _handoff(ctx: HookContext, shown: set[str]) -> list[str]:
    if not ctx.session_id:
        return []
    # The session's newest *committed* packet (see hooks.handoff.commit_compaction): a pending
    # one belongs to a compaction that may still be refused.
    raw = ctx.step(
        "handoff_latest",
        lambda: ctx.redis.get(redis_keys.handoff_latest(ctx.tenant_id, ctx.session_id)),
    )
    if not raw:
        return []
    stored = StoredPacket.from_json(str(raw))
    if stored is None:
        ctx.notes.append("newest handoff packet unreadable: not shown")
        return []
    text = stored.text
    if packet_mark(text) in shown:
        return []
    return [text]


def prompt_context(ctx: HookContext, prompt: str) -> tuple[str, list[str]]:
    """The context block for one prompt and the marks it shows ("" when nothing new).

    Args:
        ctx: The hook run.
        prompt: The user's own words (see :func:`strip_injected`).

    Returns:
        The rendered ``<nika-memory>`` block (or "") and what to pass to :func:`mark_shown`
        once the block has been handed to the CLI.
    """
    shown: set[str] = ctx.step("injected_read", lambda: already_shown(ctx)) or set()
    sections: list[tuple[str, Sequence[str]]] = []
    marks: list[str] = []
    packet = _handoff(ctx, shown)
    if packet:
        sections.append((HANDOFF_TITLE, packet))
        marks.append(packet_mark(packet[0]))
    client = memory_client(ctx)
    query = " ".join(prompt.split())[:MAX_QUERY_CHARS]
    if len(query) >= 3 and ctx.step("service", client.service_alive):
        recall = RecallQuery(
            tenant_id=ctx.tenant_id,
            query=query,
            project_id=ctx.project_id or None,
            limit=PROMPT_RECALL_LIMIT,
            session_id=ctx.session_id,
        )
        found: RecallResult | None = ctx.step("prompt_recall", lambda: client.recall(recall))
        # A handoff packet is served by its own section (the newest of this session), never
        # as a recalled memory: an older one would contradict it, this one would repeat it.
        fresh = [
            h
            for h in (found.hits if found else [])
            if h.record.id[:8] not in shown and not h.record.text.startswith(HANDOFF_MARKER)
        ]
        if fresh:
            sections.append(("Recalled for this prompt", [hit_line(h) for h in fresh]))
            marks += [h.record.id[:8] for h in fresh]
            note_hits(ctx, query, fresh)
        elif found is not None:
            ctx.notes.append(f"prompt recall: {len(found.hits)} hits, none new to this session")
    if not sections:
        return "", []
    text = render_context(ctx.tenant_id, ctx.project_id, sections, PROMPT_CONTEXT_BYTES)
    ctx.notes.append(f"prompt context {len(text.encode())} bytes")
    return text, marks
