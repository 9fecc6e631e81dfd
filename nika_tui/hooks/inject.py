"""What a hook injects into the agent's context: bounded, relevant, and never twice — for every
agent CLI (Claude Code and Codex directly, Gemini CLI's ``BeforeAgent`` and OpenCode's
``chat.message`` through the same two functions).

- **SessionStart** (≤ :data:`SESSION_START_MAX_BYTES`, one :data:`SESSION_START_RECALL_TIMEOUT_S`
  budget): the handoff packet chosen by session and time
  (:func:`nika_tui.domain.handoff_select.select_handoff`) and a digest of the project's newest
  current facts (the service's ``recent`` op: semantic, never retired, the tenant's when the
  project has none), most recent first, one line each, whole lines only, without what the
  packet already says or this context was given.
- **UserPromptSubmit** (≤ :data:`PROMPT_MAX_BYTES`): a recall for the prompt itself, the one
  moment the question is known; only hits that pass PALACE (the engine drops hits under its
  cosine floor and answers ``no memory for …`` when none is left) and that this context was not
  given already. After a compaction, this session's own packet if no SessionStart showed it.

What a context was given (memory ids, packet keys) is a Redis set per session
(``session_context``), emptied when the context is compacted (but for the compaction's time:
what the session itself said since then — its captured prompts and replies — is in its
context too, :func:`in_context`). Recalls are bounded in time
(:data:`PROMPT_RECALL_TIMEOUT_S`: Claude Code waits for UserPromptSubmit before it sends the
prompt) and skipped at once when the memory service is not running.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TypeVar

from nika_tui.domain.handoff import HANDOFF_MARKER
from nika_tui.domain.handoff_select import StoredPacket, select_handoff
from nika_tui.domain.memory import MemoryRecord, Status
from nika_tui.domain.requests import RecallHit, RecallQuery, RecallResult
from nika_tui.errors import ServiceBusy, ServiceNotRunning
from nika_tui.hooks.common import hit_line, note_hits, record_line, render_context
from nika_tui.hooks.context import HookContext
from nika_tui.hooks.native import native_text
from nika_tui.services import redis_keys
from nika_tui.services.memory_client import MemoryClient, recall_result
from nika_tui.services.rpc_call import PendingReply

SESSION_START_MAX_BYTES = 6 * 1024
PROMPT_MAX_BYTES = 3 * 1024
PROMPT_RECALL_TIMEOUT_S = 2.0
SESSION_START_RECALL_TIMEOUT_S = 2.5
PROMPT_RECALL_LIMIT = 5
DIGEST_FACTS = 12
"""Newest facts asked for; the digest shows those that fit whole in the byte budget."""
DIGEST_LINE_CHARS = 300
"""A fact's line is cut here, so one long fact does not crowd out the others."""
SESSION_CONTEXT_TTL_S = 24 * 3600
COMPACTED_MARK = "compacted@"
"""A member of a session's shown set: when its context was last compacted (ISO time)."""
MAX_PACKET_CHARS = 3500
"""A packet's share of the SessionStart budget (the rest is the project digest)."""

HANDOFF_TITLE = "Handoff packet from before the compaction"
HANDOFF_OTHER_TITLE = "Handoff from the last session on this project"
DIGEST_TITLE = "Project state: newest current facts, most recent first"
PROMPT_TITLE = "Memories relevant to this prompt"

T = TypeVar("T")


# --- what this context already holds -------------------------------------------------------
def shown(ctx: HookContext) -> set[str]:
    """Memory ids and packet keys this session's context was given."""
    members = ctx.redis.smembers(redis_keys.session_context(ctx.tenant_id, ctx.session_id))
    return {str(m) for m in members}


def mark_shown(ctx: HookContext, keys: Iterable[str]) -> None:
    """Remember what was injected (kept a day: a context does not outlive that)."""
    items = [k for k in keys if k]
    if not items or not ctx.session_id:
        return
    key = redis_keys.session_context(ctx.tenant_id, ctx.session_id)
    pipe = ctx.redis.pipeline(transaction=False)
    pipe.sadd(key, *items)
    pipe.expire(key, SESSION_CONTEXT_TTL_S)
    pipe.execute()


def forget_shown(ctx: HookContext) -> None:
    """The context was compacted: what it was given is gone from it, and so are the turns it
    held (the mark says since when this context holds its own captures again)."""
    key = redis_keys.session_context(ctx.tenant_id, ctx.session_id)
    pipe = ctx.redis.pipeline(transaction=True)
    pipe.delete(key)
    pipe.sadd(key, f"{COMPACTED_MARK}{ctx.now.isoformat()}")
    pipe.expire(key, SESSION_CONTEXT_TTL_S)
    pipe.execute()


def in_context(record: MemoryRecord, session_id: str, already: set[str]) -> bool:
    """True when this context holds ``record`` already: an injection gave it, or this very
    session said it (a prompt or reply captured from it) since its last compaction."""
    if record.id in already:
        return True
    if not session_id or record.meta.session_id != session_id:
        return False
    marks = [m.removeprefix(COMPACTED_MARK) for m in already if m.startswith(COMPACTED_MARK)]
    if not marks:
        return True  # never compacted: every turn of the session is still in its context
    try:
        since = max(datetime.fromisoformat(m) for m in marks)
    except ValueError:
        return False
    return record.meta.timestamp >= since


def relevant_hits(
    result: RecallResult | None,
    already: set[str],
    echo: str = "",
    session_id: str = "",
    loaded: str = "",
) -> list[RecallHit]:
    """Hits that passed PALACE, are not handoff packets, not in this context already
    (:func:`in_context`), not the prompt, not quoted by what the CLI loads by itself
    (``loaded``: its native instruction file, :mod:`nika_tui.hooks.native`)."""
    if result is None or result.palace or not result.hits:
        return []
    echo_norm = " ".join(echo.split()).lower()
    loaded_norm = _norm(loaded)
    out: list[RecallHit] = []
    for hit in result.hits:
        text = hit.record.text
        if in_context(hit.record, session_id, already) or text.startswith(HANDOFF_MARKER):
            continue
        if echo_norm and " ".join(text.split()).lower() == echo_norm:
            continue  # the prompt itself, stored by an earlier identical prompt
        if loaded_norm and _norm(text) in loaded_norm:
            continue
        out.append(hit)
    return out


# --- packets -------------------------------------------------------------------------------
def _packet_section(packet: StoredPacket, source: str) -> tuple[str, list[str]]:
    text = packet.text if len(packet.text) <= MAX_PACKET_CHARS else packet.text[:MAX_PACKET_CHARS]
    if source in ("compact", "prompt"):
        return HANDOFF_TITLE, text.splitlines()
    when = f"{packet.created_at:%Y-%m-%d %H:%M} UTC"
    head = f"(from {packet.cli or 'an agent'}, session {packet.session_id[:12]}, {when})"
    return HANDOFF_OTHER_TITLE, [head, *text.splitlines()]


def _context_state(ctx: HookContext) -> tuple[set[str], StoredPacket | None, StoredPacket | None]:
    """What this context was given and the (own, project) packets, in one round trip: the
    agent waits for this read."""
    pipe = ctx.redis.pipeline(transaction=False)
    pipe.smembers(redis_keys.session_context(ctx.tenant_id, ctx.session_id))
    pipe.mget(
        redis_keys.handoff_latest(ctx.tenant_id, ctx.session_id),
        redis_keys.handoff_project(ctx.tenant_id, ctx.project_id),
    )
    members, (own_raw, project_raw) = pipe.execute()
    return (
        {str(m) for m in members},
        StoredPacket.from_json(str(own_raw) if own_raw else None),
        StoredPacket.from_json(str(project_raw) if project_raw else None),
    )


def _read_state(ctx: HookContext, source: str) -> tuple[set[str], StoredPacket | None]:
    """(what was shown, the packet to inject for ``source``)."""
    state = ctx.step("context_read", lambda: _context_state(ctx))
    already, own, project = state if state else (set(), None, None)
    return already, select_handoff(source, ctx.session_id, own, project, already, ctx.now)


# --- recalls -------------------------------------------------------------------------------
RecallAsk = Callable[[], RecallResult | None]
"""A prompt's recall already sent: calling it waits for the reply (None: no recall)."""


def _no_recall() -> RecallResult | None:
    return None


def send_prompt_recall(ctx: HookContext, prompt: str) -> RecallAsk:
    """Send the prompt's recall now and return what waits for its reply, so that another
    request can be in flight meanwhile (OpenCode's first prompt: its opening digest's
    ``recent``). A prompt that gets no recall (empty, a command) sends nothing."""
    if not _recalls(prompt):
        return _no_recall
    client = MemoryClient(ctx.redis, timeout=PROMPT_RECALL_TIMEOUT_S)
    q = RecallQuery(
        tenant_id=ctx.tenant_id,
        query=prompt[:2000],
        project_id=ctx.project_id or None,
        limit=PROMPT_RECALL_LIMIT,
        session_id=ctx.session_id,
    )
    sent: PendingReply | None = ctx.step(
        "recall", lambda: _unless_down(ctx, lambda: client.start_recall(q))
    )
    if sent is None:
        return _no_recall

    def wait() -> RecallResult | None:
        result: RecallResult | None = ctx.step(
            "recall", lambda: _unless_down(ctx, lambda: recall_result(sent))
        )
        return result

    return wait


def _unless_down(ctx: HookContext, fn: Callable[[], T]) -> T | None:
    # The client checks the service's heartbeat before it asks: no service, no wait.
    try:
        return fn()
    except ServiceNotRunning as exc:
        if isinstance(exc, ServiceBusy):
            raise  # noted by the step, with its words
        ctx.notes.append("memory service not running: no recall injected")
        return None


def _newest_facts(ctx: HookContext, client: MemoryClient) -> list[MemoryRecord]:
    """The project's newest current facts, else the tenant's, within one time budget."""
    deadline = time.monotonic() + SESSION_START_RECALL_TIMEOUT_S
    # A new project has no facts yet; the tenant's newest still tell the agent where things are.
    scopes = [ctx.project_id, ""] if ctx.project_id else [""]

    def run() -> list[MemoryRecord]:
        records: list[MemoryRecord] = []
        try:
            for project in scopes:
                left = deadline - time.monotonic()
                if left <= 0:
                    ctx.notes.append("digest: no time left for the tenant's facts")
                    break
                records = client.recent(ctx.tenant_id, project, DIGEST_FACTS, timeout=left)
                if records:
                    break
        except ServiceNotRunning as exc:
            if isinstance(exc, ServiceBusy):
                raise  # noted by the step, with its words
            ctx.notes.append("memory service not running: no digest injected")
        return records

    result: list[MemoryRecord] | None = ctx.step("recent", run)
    return result or []


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def digest_facts(
    records: Sequence[MemoryRecord], already: set[str], said: str, session_id: str = ""
) -> list[MemoryRecord]:
    """The facts worth a digest line, most recent first: current (the service sends only
    those; a reply from an older one must not revive a retired fact), not a handoff packet,
    not in this context already (:func:`in_context`: a resumed session holds its own turns),
    and not quoted by the packet shown with it (its last ask is often the fact itself)."""
    said_norm = _norm(said)
    kept = [
        r
        for r in records
        if r.status is Status.CURRENT
        and not in_context(r, session_id, already)
        and not r.text.startswith(HANDOFF_MARKER)
        and _norm(r.text) not in said_norm
    ]
    return sorted(kept, key=lambda r: r.valid_from, reverse=True)


def _fitting(
    ctx: HookContext,
    sections: Sequence[tuple[str, Sequence[str]]],
    title: str,
    lines: Sequence[str],
    max_bytes: int,
) -> int:
    """How many of ``lines`` fit whole after ``sections``: a fact cut mid-line would be
    marked shown without having been read."""
    fit = 0
    for n in range(1, len(lines) + 1):
        candidate = [*sections, (title, lines[:n])]
        whole = render_context(ctx.tenant_id, ctx.project_id, candidate, 1 << 20)
        if render_context(ctx.tenant_id, ctx.project_id, candidate, max_bytes) != whole:
            break
        fit = n
    return fit


def _emit(
    ctx: HookContext,
    event_name: str,
    sections: Sequence[tuple[str, Sequence[str]]],
    keys: Iterable[str],
    max_bytes: int,
) -> str:
    if not sections:
        return ""
    text = render_context(ctx.tenant_id, ctx.project_id, sections, max_bytes)
    ctx.step("shown", lambda: mark_shown(ctx, keys))
    ctx.notes.append(f"injected {len(text.encode())} bytes")
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}},
        ensure_ascii=False,
    )


def session_start_context(ctx: HookContext, event_name: str = "SessionStart") -> str:
    """The SessionStart injection (JSON for stdout, or "")."""
    source = str(ctx.payload.get("source") or "startup")
    already, packet = _read_state(ctx, source)
    sections: list[tuple[str, Sequence[str]]] = []
    keys: list[str] = []
    if packet is not None:
        sections.append(_packet_section(packet, source))
        keys.append(packet.key)
    client = MemoryClient(ctx.redis, timeout=SESSION_START_RECALL_TIMEOUT_S)
    said = "\n".join("\n".join(lines) for _, lines in sections)
    said += "\n" + native_text(ctx.cli, ctx.tenant_id, ctx.roots)  # the CLI loads it itself
    facts = digest_facts(_newest_facts(ctx, client), already, said, ctx.session_id)
    lines = [record_line(r, DIGEST_LINE_CHARS) for r in facts]
    fit = _fitting(ctx, sections, DIGEST_TITLE, lines, SESSION_START_MAX_BYTES)
    if fit:
        sections.append((DIGEST_TITLE, lines[:fit]))
        keys += [r.id for r in facts[:fit]]
    return _emit(ctx, event_name, sections, keys, SESSION_START_MAX_BYTES)


def _recalls(prompt: str) -> bool:
    """A prompt gets a recall and an injection unless it is empty or a command."""
    return bool(prompt.strip()) and not prompt.lstrip().startswith("/")


def prompt_context(
    ctx: HookContext,
    prompt: str,
    event_name: str = "UserPromptSubmit",
    recall: RecallAsk | None = None,
) -> str:
    """The UserPromptSubmit injection for this prompt (JSON for stdout, or "").

    ``recall``: the prompt's recall, sent earlier by :func:`send_prompt_recall` (else it is
    sent here, after the context read).
    """
    if not _recalls(prompt):
        return ""
    already, packet = _read_state(ctx, "prompt")
    sections: list[tuple[str, Sequence[str]]] = []
    keys: list[str] = []
    if packet is not None:
        sections.append(_packet_section(packet, "prompt"))
        keys.append(packet.key)
    result = (recall or send_prompt_recall(ctx, prompt))()
    loaded = native_text(ctx.cli, ctx.tenant_id, ctx.roots)
    hits = relevant_hits(result, already, prompt, ctx.session_id, loaded)
    if hits:
        sections.append((PROMPT_TITLE, [hit_line(h) for h in hits]))
        keys += [h.record.id for h in hits]
        # For the relevance labels of the next reply: not something the prompt waits for.
        ctx.defer(lambda: note_hits(ctx, prompt, hits))
    elif result is not None and result.palace:
        ctx.notes.append("PALACE: nothing relevant to the prompt")
    return _emit(ctx, event_name, sections, keys, PROMPT_MAX_BYTES)


# --- the user's own words ------------------------------------------------------------------
# What hooks (ours and the CLI's own wrappers) put around injected context: never a user's words.
_INJECTED_BLOCKS = re.compile(
    r"<hook_context>.*?</hook_context>|<nika-memory\b.*?</nika-memory>", re.DOTALL | re.IGNORECASE
)


def strip_injected(prompt: str) -> str:
    """The user's own words: the prompt without injected context blocks (headless Gemini CLI
    puts SessionStart's block inside the prompt)."""
    return _INJECTED_BLOCKS.sub("", prompt).strip()


def context_of(answer: str) -> str:
    """The ``additionalContext`` text of an answer printed by this module ("" for none)."""
    if not answer:
        return ""
    data = json.loads(answer)
    return str(data["hookSpecificOutput"]["additionalContext"])
