"""Handoff packets: built at PreCompact from the transcript, the query log and the hooks fired;
committed only when the compaction happened (SessionStart ``source=compact`` or PostCompact):
then ingested in the episodic layer and kept in Redis as the session's and the project's
newest packet (the next context gets it by session and time, not by a similarity search).
SessionEnd publishes one for the project, for the next agent.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

from nika_tui.domain.envelope import ActionType, Domain, Intent, NikaMeta
from nika_tui.domain.handoff import (
    Decision,
    FileChange,
    HandoffPacket,
    HookFired,
    RagQuery,
    pending_tasks,
    render,
)
from nika_tui.domain.handoff_select import StoredPacket, packet_key
from nika_tui.domain.memory import Layer
from nika_tui.hooks.common import (
    bookkeeping,
    digest_of,
    make_meta,
    parse_iso,
    recent_files,
    redact,
    remember,
    session_digest,
    update_fill,
)
from nika_tui.hooks.context import HookContext
from nika_tui.hooks.inject import forget_shown
from nika_tui.services import kernel_store, redis_keys
from nika_tui.services.transcripts.common import ContextFill, TranscriptDigest, TranscriptFormat
from nika_tui.services.wm_store import read_agent_fills, read_stream

RECENT_QUERIES = 10
RECENT_HOOKS = 50
HANDOFF_COPY_TTL_S = 6 * 3600
"""How long a pending packet waits for its compaction."""
HANDOFF_KEEP_S = 7 * 24 * 3600
"""How long the newest committed packets stay in Redis (the memory keeps them for good)."""


def _json_list(raw: str | None) -> list[str]:
    try:
        value = json.loads(raw or "[]")
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def rag_state(ctx: HookContext) -> list[RagQuery]:
    """The tenant's latest recalls (this session's first), from the ``query_log`` stream."""
    entries = read_stream(ctx.redis, redis_keys.query_log(ctx.tenant_id), RECENT_QUERIES)
    out: list[RagQuery] = []
    for _id, fields in entries:
        ids = _json_list(fields.get("ids"))
        out.append(
            RagQuery(
                at=parse_iso(fields.get("at")),
                query=str(fields.get("query", ""))[:200],
                hits=len(ids),
                top_ids=tuple(i[:8] for i in ids[:3]),
                palace=fields.get("palace") == "1",
            )
        )
    mine = [
        q for q, (_i, f) in zip(out, entries, strict=False) if f.get("session_id") == ctx.session_id
    ]
    return mine or out


def hooks_fired(ctx: HookContext) -> list[HookFired]:
    """This session's hook events, oldest first."""
    entries = read_stream(ctx.redis, redis_keys.hooks_fired(ctx.tenant_id), RECENT_HOOKS)
    fired = [
        HookFired(parse_iso(f.get("at")), f.get("cli", ""), f.get("event", ""))
        for _id, f in entries
        if f.get("session_id") == ctx.session_id
    ]
    return list(reversed(fired))


def build_packet(
    ctx: HookContext,
    digest: TranscriptDigest | None,
    fill: ContextFill | None,
    rag: Sequence[RagQuery],
    fired: Sequence[HookFired],
) -> HandoffPacket:
    """Assemble the packet from what could be read (any part may be empty)."""
    files = recent_files(digest)
    last_prompt = digest.prompts[-1][1] if digest and digest.prompts else ""
    return HandoffPacket(
        tenant_id=ctx.tenant_id,
        session_id=ctx.session_id,
        project_id=ctx.project_id,
        created_at=ctx.now,
        trigger=str(ctx.payload.get("trigger") or "")
        or (
            f"none (session ended: {ctx.payload.get('reason') or '?'})"
            if ctx.event == "SessionEnd"
            else ""
        ),
        fill_percent=fill.fill_percent if fill else 0.0,
        decisions=tuple(Decision(at, text) for at, text in (digest.decisions if digest else [])),
        files=tuple(
            FileChange(p, digest.files[p].edits, digest.files[p].added, digest.files[p].removed)
            for p in files
        )
        if digest
        else (),
        pending=tuple(pending_tasks(digest.todos if digest else [], last_prompt, files)),
        rag=tuple(rag),
        hooks=tuple(fired),
        last_prompt=last_prompt,
    )


def _packet_for(
    ctx: HookContext,
    reason: str,
    digest: TranscriptDigest | None = None,
    fill: ContextFill | None = None,
    record: bool = True,
) -> tuple[StoredPacket, NikaMeta] | None:
    """Build this session's packet now (None when there is nothing to hand off).

    ``digest`` and ``fill`` stand in for a transcript's when the CLI keeps none that nika reads
    (OpenCode: its plugin sends the last ask, answer and usage). ``record=False`` (no hook
    fired: the kernel watcher builds it) reads the fill without the hook bookkeeping.
    """
    digest = digest or digest_of(ctx)
    if reason in ("session-end", "agent-exit") and (digest is None or not digest.prompts):
        return None  # a session that never got a prompt has nothing to hand off
    # The fill and the hook record come first so the packet includes this very event.
    if record:
        fill = bookkeeping(ctx) or fill
    else:
        fill = ctx.step("fill", lambda: update_fill(ctx)) or fill
    rag = ctx.step("rag_state", lambda: rag_state(ctx)) or []
    fired = ctx.step("hooks_fired_read", lambda: hooks_fired(ctx)) or []
    packet = build_packet(ctx, digest, fill, rag, fired)
    meta = make_meta(
        ctx,
        digest,
        action_type=ActionType.SYSTEM,
        domain=Domain.MEMORY,
        intent=Intent.MAINTAIN,
        entity_ids=(f"handoff:{ctx.session_id}",) if ctx.session_id else (),
        produces=("handoff-packet",),
    )
    stored = StoredPacket(
        key=packet_key(ctx.session_id, ctx.now),
        session_id=ctx.session_id,
        project_id=ctx.project_id,
        cli=ctx.agent_type,
        created_at=ctx.now,
        reason=reason,
        text=redact(render(packet)),
    )
    if reason == "compaction":
        ctx.notes.append(
            f"handoff packet: {len(packet.decisions)} decisions, {len(packet.files)} files, "
            f"{len(packet.pending)} pending"
        )
    return stored, meta


def pre_compact(
    ctx: HookContext, digest: TranscriptDigest | None = None, fill: ContextFill | None = None
) -> str:
    """Build the handoff packet and keep it *pending*: the CLI may still refuse to compact.

    Claude Code runs PreCompact even for a ``/compact`` it then refuses ("Not enough messages
    to compact."); the packet is committed (ingested, counted as a compaction, shown) only by
    :func:`commit_compaction`, and the next PreCompact replaces a packet that never was.
    """
    if not ctx.session_id:
        bookkeeping(ctx)
        return ""
    built = _packet_for(ctx, "compaction", digest, fill)
    if built is None:
        return ""
    stored, meta = built
    ctx.step(
        "handoff_pending",
        lambda: ctx.redis.set(
            redis_keys.handoff_packet(ctx.tenant_id, ctx.session_id),
            json.dumps(
                {
                    "packet": stored.to_json(),
                    "meta": meta.model_dump_json(),
                    "trigger": str(ctx.payload.get("trigger") or ""),
                }
            ),
            ex=HANDOFF_COPY_TTL_S,
        ),
    )
    return ""


def _publish(ctx: HookContext, stored: StoredPacket, own: bool) -> None:
    pipe = ctx.redis.pipeline(transaction=True)
    if own:
        pipe.set(
            redis_keys.handoff_latest(ctx.tenant_id, stored.session_id),
            stored.to_json(),
            ex=HANDOFF_KEEP_S,
        )
    pipe.set(
        redis_keys.handoff_project(ctx.tenant_id, stored.project_id),
        stored.to_json(),
        ex=HANDOFF_KEEP_S,
    )
    pipe.execute()


def commit_compaction(ctx: HookContext) -> StoredPacket | None:
    """The compaction happened: commit the pending packet (once, whichever of SessionStart
    ``source=compact`` or PostCompact comes first) and count the compaction."""
    if not ctx.session_id:
        return None
    raw = ctx.step(
        "handoff_commit",
        lambda: ctx.redis.getdel(redis_keys.handoff_packet(ctx.tenant_id, ctx.session_id)),
    )
    if not raw:
        return None
    try:
        data = json.loads(str(raw))
        stored = StoredPacket.from_json(data["packet"])
        meta = NikaMeta.model_validate_json(data["meta"])
        pending_trigger = str(data.get("trigger") or "")
    except (ValueError, KeyError, TypeError):
        stored = None
    if stored is None:
        ctx.notes.append("pending handoff packet unreadable: dropped")
        return None
    ctx.step("remember", lambda: remember(ctx, stored.text, Layer.EPISODIC, meta))
    ctx.step("handoff_publish", lambda: _publish(ctx, stored, own=True))
    ctx.step("forget_shown", lambda: forget_shown(ctx))
    # PreCompact's trigger (auto / manual); SessionStart's payload has none.
    trigger = pending_trigger or str(ctx.payload.get("trigger") or "")
    ctx.step(
        "compaction",
        lambda: kernel_store.record_compaction(ctx.redis, ctx.tenant_id, ctx.now, trigger),
    )
    ctx.notes.append("compaction committed: handoff packet stored")
    return stored


def post_compact(ctx: HookContext) -> str:
    """PostCompact: the compaction happened (commit, if SessionStart did not already)."""
    commit_compaction(ctx)
    bookkeeping(ctx)
    return ""


def session_end(ctx: HookContext) -> str:
    """SessionEnd: a packet for the project, so the next session (any CLI) starts from it.

    Not ingested (the turns themselves were); it is the hand-off when an agent stops
    mid-task, kept :data:`HANDOFF_KEEP_S` and shown once to each later session.
    """
    built = _packet_for(ctx, "session-end") if ctx.session_id else None
    if built is None:
        bookkeeping(ctx)
        return ""
    stored, _meta = built
    ctx.step("handoff_publish", lambda: _publish(ctx, stored, own=False))
    ctx.notes.append("session-end handoff packet published for the project")
    return ""


def _reported_fill(ctx: HookContext) -> ContextFill | None:
    """The fill this agent last reported (OpenCode's plugin, at its last idle): no file holds
    it, so the watcher's packet takes it from the working memory."""
    fill = read_agent_fills(ctx.redis, ctx.tenant_id).get(ctx.agent_type)
    if fill is None:
        return None
    return ContextFill(fill, 0, 0, TranscriptFormat.OPENCODE, at=ctx.now)


def exit_handoff(ctx: HookContext, window: str, last_prompt: str = "") -> StoredPacket | None:
    """The agent's process ended without SessionEnd (a crash, a kill, a stop on quota): the
    packet SessionEnd would have published, built from the transcript by the kernel watcher
    (``ctx.payload`` carries the session, transcript, cwd and why it ended; no hook fired, so
    nothing is recorded as one; OpenCode's session is read from its database,
    :func:`~nika_tui.hooks.common.session_digest`). A killed CLI may not have flushed its
    transcript's tail: the last prompt its hook saw is then the packet's last ask. None when
    the session had no prompt to hand off."""
    digest = session_digest(ctx)
    if (digest is None or not digest.prompts) and last_prompt:
        base = digest or TranscriptDigest(format=TranscriptFormat(window))
        digest = dataclasses.replace(base, prompts=[(None, last_prompt)])
    fill = ctx.step("fill_reported", lambda: _reported_fill(ctx)) if ctx.cli == "opencode" else None
    built = _packet_for(ctx, "agent-exit", digest, fill, record=False) if ctx.session_id else None
    if built is None:
        return None
    stored, _meta = built
    ctx.step("handoff_publish", lambda: _publish(ctx, stored, own=False))
    return stored
