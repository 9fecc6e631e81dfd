"""The memory browser's reads and actions on the live source, through the memory service.

A mixin of :class:`nika_tui.dashboard.redis_source.RedisDashboardSource`: every call is an RPC
(``memory.list``, ``history``, ``memory.retire`` / ``restore`` / ``review``), since the memories
live in the vector store only the service opens. Actions raise the service's ``NikaError``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from nika_tui.dashboard.memory_parse import chain_from_history, history_from_bus, parse_memory_list
from nika_tui.dashboard.memory_views import (
    PAGE,
    ChainVersion,
    MemoryEvent,
    MemoryFilter,
    MemoryList,
)
from nika_tui.dashboard.redis_reads import RedisReads, bus_files
from nika_tui.domain import protocol_requests as req

LIST_TIMEOUT_S = 15.0
"""A list scrolls the whole tenant: allow more than a recall's few seconds."""
HISTORY_BUS_FILES = 3
"""Bus files a memory's history reads (the newest; the bus tail reads as many)."""


class RedisMemories(RedisReads):
    """The :class:`~nika_tui.dashboard.memory_views.MemoryBrowserPort` of the live source."""

    def memories(self, tenant_id: str, flt: MemoryFilter, offset: int = 0) -> MemoryList:
        """A page of the tenant's memories matching ``flt`` (raises when the service is down)."""
        request = req.MemoryListRequest(
            tenant_id,
            text=flt.text or None,
            layer=flt.layer or None,
            project_id=flt.project or None,
            status=flt.status or None,
            as_of=flt.as_of.isoformat() if flt.as_of is not None else None,
            limit=PAGE,
            offset=offset or None,
        )
        return parse_memory_list(tenant_id, self._ask(request, LIST_TIMEOUT_S))

    def memory_chain(self, tenant_id: str, memory_id: str) -> tuple[ChainVersion, ...]:
        """The supersede chain through ``memory_id`` (the service's ``history``)."""
        reply = self._ask(req.HistoryRequest(tenant_id, memory_id))
        records = reply.get("records")
        return chain_from_history(records if isinstance(records, list) else [])

    def retire_memory(self, tenant_id: str, memory_id: str, reason: str) -> str:
        """Retire now, logged ``memory.retired`` with the person's reason."""
        out = self._ask(req.MemoryRetireRequest(tenant_id, memory_id, reason))
        return f"{memory_id}: {out.get('status', 'retired')}"

    def restore_memory(self, tenant_id: str, memory_id: str, reason: str) -> str:
        """Make it current again, logged ``memory.restored`` with the person's reason."""
        out = self._ask(req.MemoryRestoreRequest(tenant_id, memory_id, reason))
        return f"{memory_id}: {out.get('status', 'restored')}"

    def review_memory(self, tenant_id: str, memory_id: str, reason: str) -> str:
        """Queue a "retire this?" pair for a person's later decision."""
        out = self._ask(req.MemorySendReviewRequest(tenant_id, memory_id, reason))
        return f"{memory_id}: in review as {out.get('review_id', '?')}"

    def memory_history(self, tenant_id: str, memory_id: str) -> tuple[MemoryEvent, ...]:
        """The decisions about ``memory_id`` in the tenant's newest bus files, oldest first."""
        lines: list[str] = []
        for path in bus_files(self.roots.tenant_data_dir(tenant_id) / "bus")[-HISTORY_BUS_FILES:]:
            try:
                lines.extend(path.read_text(encoding="utf-8", errors="replace").splitlines())
            except OSError:
                continue  # rotated away since listed: the other files still tell the rest
        return history_from_bus(lines, memory_id)

    def mark_recall(self, tenant_id: str, query: str, hit_id: str, useful: bool) -> str:
        """Append the mark to the tenant's relevance set, as `nika memory feedback` does."""
        from nika_tui.tuning.relevance import mark

        at, ids = datetime.now(UTC).isoformat(), [hit_id]
        mark(tenant_id, query, at, useful=ids if useful else (),
             not_useful=() if useful else ids, where=self.roots)  # fmt: skip
        return f"{hit_id[:8]} marked {'useful' if useful else 'not useful'} for tuning"
