"""The memory browser's read model and port: every memory of a tenant, its chain, the actions.

Plain frozen dataclasses and a :class:`typing.Protocol`, like :mod:`nika_tui.dashboard.model`
(whose :class:`~nika_tui.dashboard.model.DashboardSource` extends :class:`MemoryBrowserPort`);
kept apart so the model module does not grow past what one reader can hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

MemoryStatus = Literal["current", "retired", "in review", "unreadable"]
STATUS_FILTERS: tuple[str, ...] = ("", "current", "retired", "review")
"""The browser's status filter, cycled by a key ("" = every status)."""
LAYER_FILTERS: tuple[str, ...] = ("", "semantic", "episodic")
PAGE = 500
"""Memories per page of the browser (the service's ``memory.list`` cap)."""


@dataclass(frozen=True, slots=True)
class MemoryView:
    """One memory as the browser lists it."""

    id: str
    text: str
    layer: str = ""
    project: str = ""
    status: MemoryStatus = "current"
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    """When it stopped being true (its successor's valid time, or its retirement)."""
    asserted_at: datetime | None = None
    agent: str = ""
    session: str = ""
    hook: str = ""
    """What wrote it: the NIKA_META trigger (user, hook event, import…)."""
    source: str = ""
    """``file:line`` of an imported memory ('' when written live)."""
    superseded_by: str = ""
    retire_reason: str = ""
    review_id: str = ""
    """The pending review pair naming this memory ('' when none)."""


@dataclass(frozen=True, slots=True)
class MemoryFilter:
    """The browser's filters; an empty value matches everything."""

    text: str = ""
    """A substring of the text, or an exact memory id."""
    layer: str = ""
    project: str = ""
    status: str = ""
    """current | retired | review | '' (every status)."""
    as_of: datetime | None = None
    """Keep what was current then, by valid time (issue 21's as-of)."""


@dataclass(frozen=True, slots=True)
class MemoryList:
    """The memories matching a filter, newest first: one page, or the pages loaded so far."""

    tenant_id: str
    memories: tuple[MemoryView, ...] = ()
    total: int = 0
    """How many matched in all (more than ``memories`` when pages are left to load)."""

    @property
    def more(self) -> int:
        """Matches not loaded yet (the next pages)."""
        return max(0, self.total - len(self.memories))


@dataclass(frozen=True, slots=True)
class ChainVersion:
    """One version of a fact in its supersede chain, oldest valid time first."""

    memory: MemoryView
    replaced_by: str = ""
    why: str = ""


@dataclass(frozen=True, slots=True)
class MemoryEvent:
    """One decision about a memory, as its tenant's bus logged it (its history)."""

    at: datetime | None
    what: str
    """``retired``, ``restored``, ``queued for review``, ``review …: approve``…"""
    why: str = ""
    """The reason given (a person's words, the judge's reason, a review note)."""


class MemoryBrowserPort(Protocol):
    """What the memory browser reads and does (both sources implement it)."""

    def memories(self, tenant_id: str, flt: MemoryFilter, offset: int = 0) -> MemoryList:
        """One page of the tenant's memories matching ``flt``, newest valid time first: at most
        :data:`PAGE` after the first ``offset`` (``total`` counts every match)."""
        ...

    def memory_chain(self, tenant_id: str, memory_id: str) -> tuple[ChainVersion, ...]:
        """The supersede chain through one memory, oldest first."""
        ...

    def retire_memory(self, tenant_id: str, memory_id: str, reason: str) -> str:
        """Retire one memory now (a person's decision); returns a one-line outcome."""
        ...

    def restore_memory(self, tenant_id: str, memory_id: str, reason: str) -> str:
        """Make a retired memory current again (the person's reason is logged)."""
        ...

    def review_memory(self, tenant_id: str, memory_id: str, reason: str) -> str:
        """Queue "retire this?" in the review queue."""
        ...

    def memory_history(self, tenant_id: str, memory_id: str) -> tuple[MemoryEvent, ...]:
        """What was decided about one memory and why, oldest first (from the tenant's bus)."""
        ...
