"""The PreCompact handoff packet (seed, « PreCompact handoff packet »).

What an agent needs to resume after its context is compacted: decisions taken (with
timestamps), files modified (with a diff summary), pending tasks (with the minimum context to
resume), the RAG state (recent queries and their hits) and the lifecycle hooks fired. It is
ingested in the episodic layer and comes back at the next SessionStart by one search, so its
text starts with a fixed marker and the session id (what that search matches on).

Pure: everything is passed in; rendering is deterministic and bounded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from nika_tui.domain.memory import MAX_TEXT_CHARS

HANDOFF_MARKER = "HANDOFF PACKET"
MAX_DECISIONS = 12
MAX_FILES = 15
MAX_TASKS = 10
MAX_QUERIES = 6
MAX_HOOKS = 12


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision or conclusion the agent wrote."""

    at: datetime | None
    text: str


@dataclass(frozen=True, slots=True)
class FileChange:
    """One modified file: how many edits, lines added and removed."""

    path: str
    edits: int
    added: int
    removed: int

    @property
    def summary(self) -> str:
        """``3 edits, +12/-4``."""
        return f"{self.edits} edit{'s' if self.edits != 1 else ''}, +{self.added}/-{self.removed}"


@dataclass(frozen=True, slots=True)
class PendingTask:
    """A task not completed, with the minimum context to resume it."""

    text: str
    status: str
    context: str = ""


@dataclass(frozen=True, slots=True)
class RagQuery:
    """A recent recall and what it returned."""

    at: datetime | None
    query: str
    hits: int
    top_ids: tuple[str, ...] = ()
    palace: bool = False


@dataclass(frozen=True, slots=True)
class HookFired:
    """One lifecycle hook event of this session."""

    at: datetime | None
    cli: str
    event: str


@dataclass(frozen=True, slots=True)
class HandoffPacket:
    """Everything handed from one context to the next."""

    tenant_id: str
    session_id: str
    project_id: str
    created_at: datetime
    trigger: str
    fill_percent: float
    decisions: tuple[Decision, ...] = ()
    files: tuple[FileChange, ...] = ()
    pending: tuple[PendingTask, ...] = ()
    rag: tuple[RagQuery, ...] = ()
    hooks: tuple[HookFired, ...] = ()
    last_prompt: str = ""
    extra: dict[str, str] = field(default_factory=dict)


def pending_tasks(
    todos: Sequence[tuple[str, str]], last_prompt: str, recent_files: Sequence[str]
) -> list[PendingTask]:
    """Todos not completed, each with the context to pick it up (last ask, files in play)."""
    files = ", ".join(recent_files[:3])
    context_parts = []
    if last_prompt:
        context_parts.append(f"last ask: {last_prompt[:160]}")
    if files:
        context_parts.append(f"files: {files}")
    context = "; ".join(context_parts)
    return [
        PendingTask(text, status, context)
        for text, status in todos
        if status not in ("completed", "done", "cancelled")
    ]


def _when(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ") if at else "?"


def render(packet: HandoffPacket, max_chars: int = MAX_TEXT_CHARS) -> str:
    """The packet as text (what is ingested), never longer than ``max_chars``.

    Sections are cut to their newest items first; if the text is still too long the tail is
    truncated (the marker, session and pending tasks come first, so they survive).
    """
    lines = [
        f"{HANDOFF_MARKER} session {packet.session_id or '?'} project {packet.project_id or '-'}",
        f"tenant {packet.tenant_id}; created {_when(packet.created_at)}; compaction trigger "
        f"{packet.trigger or '?'}; context fill {packet.fill_percent:.1f}%",
    ]
    if packet.last_prompt:
        lines.append(f"Last ask: {packet.last_prompt}")
    lines.append("Pending tasks:")
    lines += [
        f"- [{t.status}] {t.text}" + (f" ({t.context})" if t.context else "")
        for t in packet.pending[:MAX_TASKS]
    ] or ["- none recorded"]
    lines.append("Decisions:")
    lines += [f"- {_when(d.at)} {d.text}" for d in packet.decisions[-MAX_DECISIONS:]] or [
        "- none recorded"
    ]
    lines.append("Files modified:")
    lines += [f"- {f.path}: {f.summary}" for f in packet.files[:MAX_FILES]] or ["- none"]
    lines.append("RAG state (recent queries):")
    lines += [
        f"- {_when(q.at)} {q.query!r}: "
        + ("no memory" if q.palace or not q.hits else f"{q.hits} hits {', '.join(q.top_ids[:3])}")
        for q in packet.rag[:MAX_QUERIES]
    ] or ["- none"]
    lines.append("Hooks fired:")
    lines += [f"- {_when(h.at)} {h.cli} {h.event}" for h in packet.hooks[-MAX_HOOKS:]] or ["- none"]
    text = "\n".join(lines)
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return text


def handoff_query(session_id: str, project_id: str) -> str:
    """The one search that finds a session's latest packet at the next SessionStart."""
    return f"{HANDOFF_MARKER} session {session_id} project {project_id or '-'}"
