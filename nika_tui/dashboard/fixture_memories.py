"""The memory browser on the fixture source: the tenant's ``memories`` records of the YAML file.

The records have the service's ``memory.list`` shape and go through the same parser and filter
(:mod:`nika_tui.dashboard.memory_parse`); actions change the in-memory copy and log on the bus
as the service does, unless the source is the offline preview, which refuses them.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from nika_tui.dashboard.memory_parse import chain_of, history_from_bus, matches, parse_memory
from nika_tui.dashboard.memory_views import (
    PAGE,
    ChainVersion,
    MemoryEvent,
    MemoryFilter,
    MemoryList,
    MemoryView,
)
from nika_tui.errors import ValidationFailed


class FixtureMemories:
    """The :class:`~nika_tui.dashboard.memory_views.MemoryBrowserPort` of the fixture source."""

    _data: dict[str, Any]
    _lock: threading.Lock
    actions: list[tuple[str, ...]]

    if TYPE_CHECKING:

        def _t(self, tenant_id: str) -> dict[str, Any]: ...
        def _need_service(self) -> None: ...
        def _refuse_in_preview(self, what: str) -> None: ...
        def _log(
            self, tenant_id: str, line_id: str, kind: str, action_type: str, body: dict[str, Any]
        ) -> None: ...

    def _views(self, tenant_id: str) -> list[MemoryView]:
        return [parse_memory(r) for r in self._t(tenant_id).get("memories") or []]

    def memories(self, tenant_id: str, flt: MemoryFilter, offset: int = 0) -> MemoryList:
        """A page of the fixture's memories matching ``flt``, newest valid time first."""
        self._need_service()
        with self._lock:
            views = [v for v in self._views(tenant_id) if matches(v, flt)]
        views.sort(key=lambda v: (v.valid_from is not None, v.valid_from, v.id), reverse=True)
        return MemoryList(tenant_id, tuple(views[offset : offset + PAGE]), len(views))

    def memory_chain(self, tenant_id: str, memory_id: str) -> tuple[ChainVersion, ...]:
        """The chain through ``memory_id`` among the fixture's memories."""
        self._need_service()
        with self._lock:
            return chain_of(memory_id, self._views(tenant_id))

    def _record(self, tenant_id: str, memory_id: str) -> dict[str, Any]:
        for record in self._t(tenant_id).get("memories") or []:
            if isinstance(record, dict) and record.get("id") == memory_id:
                return record
        raise ValidationFailed(f"no memory {memory_id} in tenant {tenant_id!r}", "refresh")

    def retire_memory(self, tenant_id: str, memory_id: str, reason: str) -> str:
        """Mark the record retired and log ``memory.retired``."""
        self._refuse_in_preview("retire a memory")
        self._need_service()
        with self._lock:
            record = self._record(tenant_id, memory_id)
            if record.get("status") == "retired":
                return f"{memory_id}: already-retired"
            record.update(
                status="retired",
                retired_at=self._data.get("now"),
                retire_reason=f"person: {reason}",
            )
            record["valid_until"] = self._data.get("now")
            self.actions.append(("retire", tenant_id, memory_id))
            body = {"memory_id": memory_id, "reason": f"person: {reason}"}
            self._log(tenant_id, f"ret-{memory_id}", "memory.retired", "review", body)
        return f"{memory_id}: retired"

    def restore_memory(self, tenant_id: str, memory_id: str, reason: str) -> str:
        """Make the record current again and log ``memory.restored``."""
        self._refuse_in_preview("restore a memory")
        self._need_service()
        with self._lock:
            record = self._record(tenant_id, memory_id)
            if record.get("status") != "retired":
                return f"{memory_id}: already-current"
            record.update(status="current", retired_at=None, retire_reason=None, valid_until=None)
            record["superseded_by"] = None
            self.actions.append(("restore", tenant_id, memory_id))
            body = {"memory_id": memory_id, "reason": f"person: {reason}"}
            self._log(tenant_id, f"res-{memory_id}", "memory.restored", "review", body)
        return f"{memory_id}: restored"

    def review_memory(self, tenant_id: str, memory_id: str, reason: str) -> str:
        """Queue a "retire this?" pair in the fixture's review queue."""
        self._refuse_in_preview("send a memory to review")
        self._need_service()
        with self._lock:
            record = self._record(tenant_id, memory_id)
            review_id = f"p{memory_id.replace('-', '')[:11]}"
            record["review_id"] = review_id
            t = self._t(tenant_id)
            t.setdefault("review", []).append(
                {
                    "id": review_id,
                    "old_id": memory_id,
                    "old_text": record.get("text", ""),
                    "new_id": "",
                    "new_text": f"(retire? {reason})",
                    "reason": f"person asks: {reason}",
                    "judge": "person",
                    "created_at": self._data.get("now"),
                    "status": "pending",
                }
            )
            self.actions.append(("send-review", tenant_id, memory_id))
            body = {"review_id": review_id, "old_id": memory_id, "reason": f"person asks: {reason}"}
            self._log(tenant_id, f"rev-{memory_id}", "review.requested", "review", body)
        return f"{memory_id}: in review as {review_id}"

    def memory_history(self, tenant_id: str, memory_id: str) -> tuple[MemoryEvent, ...]:
        """The decisions about ``memory_id`` among the fixture's bus lines."""
        self._need_service()
        with self._lock:
            lines = [str(x) for x in self._t(tenant_id).get("bus") or []]
        return history_from_bus(lines, memory_id)
