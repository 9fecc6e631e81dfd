"""PreCompact: build the handoff packet from the transcript, the query log and the hooks fired,
and ingest it in the episodic layer (the next context gets it back by one search).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from nika_tui.domain.envelope import ActionType, Domain, Intent
from nika_tui.domain.handoff import (
    Decision,
    FileChange,
    HandoffPacket,
    HookFired,
    RagQuery,
    pending_tasks,
    render,
)
from nika_tui.domain.memory import Layer
from nika_tui.hooks import HookContext
from nika_tui.hooks.common import (
    bookkeeping,
    digest_of,
    make_meta,
    parse_iso,
    recent_files,
    redact,
    remember,
)
from nika_tui.services import redis_keys
from nika_tui.services.transcripts import ContextFill, TranscriptDigest
from nika_tui.services.wm_store import read_stream

RECENT_QUERIES = 10
RECENT_HOOKS = 50
HANDOFF_COPY_TTL_S = 6 * 3600


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
        trigger=str(ctx.payload.get("trigger") or ""),
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


def pre_compact(ctx: HookContext) -> str:
    """Ingest the handoff packet (episodic); compaction is recorded by the kernel state step."""
    digest = digest_of(ctx)
    # The fill and the hook record come first so the packet includes this very event.
    fill = bookkeeping(ctx)
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
    text = redact(render(packet))
    key = ctx.step("remember", lambda: remember(ctx, text, Layer.EPISODIC, meta))
    if ctx.session_id:
        # The next SessionStart may come before the service has indexed the packet.
        ctx.step(
            "handoff_copy",
            lambda: ctx.redis.set(
                redis_keys.handoff_packet(ctx.tenant_id, ctx.session_id),
                text,
                ex=HANDOFF_COPY_TTL_S,
            ),
        )
    if key:
        ctx.notes.append(
            f"handoff packet: {len(packet.decisions)} decisions, {len(packet.files)} files, "
            f"{len(packet.pending)} pending"
        )
    return ""
