"""Memory records (the service's ``memory.list`` / ``history`` replies) → browser views.

Total like :mod:`nika_tui.dashboard.parse`: a record that does not parse becomes an
``unreadable`` row keeping its id. The filter and chain functions work on views, so the fixture
source answers exactly as the service would on the same records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from nika_tui.dashboard.memory_views import (
    ChainVersion,
    MemoryEvent,
    MemoryFilter,
    MemoryList,
    MemoryView,
)
from nika_tui.dashboard.model import UNREADABLE, as_datetime


def _s(value: object) -> str:
    return "" if value is None else str(value)


def parse_memory(record: object) -> MemoryView:
    """One record (``MemoryRecord`` JSON, plus ``valid_until`` / ``review_id``) → view."""
    if not isinstance(record, Mapping) or not record.get("id"):
        return MemoryView(id=UNREADABLE, text=_s(record)[:200], status="unreadable")
    meta: Mapping[str, Any] = record.get("meta") if isinstance(record.get("meta"), Mapping) else {}  # type: ignore[assignment]
    review_id = _s(record.get("review_id"))
    retired = record.get("status") == "retired"
    return MemoryView(
        id=_s(record["id"]),
        text=_s(record.get("text")),
        layer=_s(record.get("layer")),
        project=_s(meta.get("project_id")),
        status="in review" if review_id else ("retired" if retired else "current"),
        valid_from=as_datetime(record.get("valid_from")),
        valid_until=as_datetime(record.get("valid_until")),
        asserted_at=as_datetime(record.get("asserted_at")),
        agent=_s(meta.get("agent_type")),
        session=_s(meta.get("session_id")),
        hook=_s(meta.get("trigger")),
        source=_s(meta.get("source")),
        superseded_by=_s(record.get("superseded_by")),
        retire_reason=_s(record.get("retire_reason")),
        review_id=review_id,
    )


def parse_memory_list(tenant_id: str, reply: object) -> MemoryList:
    """The ``memory.list`` reply → :class:`MemoryList`."""
    if not isinstance(reply, Mapping):
        return MemoryList(tenant_id)
    records = reply.get("records")
    views = tuple(parse_memory(r) for r in records) if isinstance(records, list) else ()
    total = reply.get("total")
    return MemoryList(tenant_id, views, total if isinstance(total, int) else len(views))


def current_at(memory: MemoryView, as_of: datetime) -> bool:
    """Whether ``memory`` was the current version at ``as_of`` (by valid time)."""
    if memory.valid_from is None or memory.valid_from > as_of:
        return False
    return memory.valid_until is None or memory.valid_until > as_of


def matches(memory: MemoryView, flt: MemoryFilter) -> bool:
    """True when ``memory`` passes every filter set (the service applies the same rules)."""
    if flt.status == "review" and not memory.review_id:
        return False
    # A memory in review is still current until the decision: "current" keeps it.
    in_review_current = memory.status == "in review" and flt.status == "current"
    if flt.status in ("current", "retired") and memory.status != flt.status:
        return in_review_current and _still_current(memory, flt)
    if flt.layer and memory.layer != flt.layer:
        return False
    if flt.project and memory.project != flt.project:
        return False
    needle = flt.text.casefold()
    if needle and needle not in memory.text.casefold() and needle != memory.id:
        return False
    return flt.as_of is None or current_at(memory, flt.as_of)


def _still_current(memory: MemoryView, flt: MemoryFilter) -> bool:
    """The rest of :func:`matches` for an in-review memory under the "current" filter."""
    return matches(memory, MemoryFilter(flt.text, flt.layer, flt.project, "", flt.as_of))


def chain_of(memory_id: str, memories: Iterable[MemoryView]) -> tuple[ChainVersion, ...]:
    """The supersede chain through ``memory_id`` (predecessors and successors), oldest first."""
    by_id = {m.id: m for m in memories}
    before = {m.superseded_by: m.id for m in by_id.values() if m.superseded_by}
    start = memory_id
    seen = {start}
    while start in before and before[start] not in seen:
        start = before[start]
        seen.add(start)
    out: list[ChainVersion] = []
    node: str = start
    visited: set[str] = set()
    while node in by_id and node not in visited:
        visited.add(node)
        m = by_id[node]
        out.append(ChainVersion(m, m.superseded_by, m.retire_reason))
        node = m.superseded_by
    return tuple(out)


def chain_from_history(records: Sequence[object]) -> tuple[ChainVersion, ...]:
    """The ``history`` reply's records (one chain) → versions, oldest valid time first.

    ``history`` records carry no ``valid_until``: it is the successor's valid time, or the
    retirement time of a memory retired without one (as :mod:`nika_tui.domain.timeline` says).
    """
    views = [parse_memory(r) for r in records]
    by_id = {v.id: v for v in views}
    out: list[ChainVersion] = []
    for v in sorted(views, key=lambda v: (v.valid_from is None, v.valid_from or 0, v.id)):
        successor = by_id.get(v.superseded_by)
        raw = next((r for r in records if isinstance(r, Mapping) and r.get("id") == v.id), {})
        retired_at = as_datetime(raw.get("retired_at")) if isinstance(raw, Mapping) else None
        until = successor.valid_from if successor is not None else retired_at
        if until is not None and v.valid_from is not None:
            until = max(until, v.valid_from)
        out.append(ChainVersion(_with_until(v, until), v.superseded_by, v.retire_reason))
    return tuple(out)


def _with_until(view: MemoryView, until: datetime | None) -> MemoryView:
    from dataclasses import replace

    return replace(view, valid_until=until) if view.valid_until is None else view


def _event(kind: str, body: Mapping[str, Any], memory_id: str) -> tuple[str, str] | None:
    """(what, why) of a bus line about ``memory_id``, ``None`` when it is not about it."""
    if memory_id not in (body.get("memory_id"), body.get("old_id"), body.get("new_id")):
        return None
    if kind == "memory.retired":
        by = _s(body.get("superseded_by"))
        return ("retired" + (f", superseded by {by}" if by else ""), _s(body.get("reason")))
    if kind == "memory.restored":
        return "restored", _s(body.get("reason"))
    if kind == "review.requested":
        return f"queued for review {_s(body.get('review_id'))}", _s(body.get("reason"))
    if kind == "review.resolved":
        decision = _s(body.get("decision") or body.get("resolution"))
        return f"review {_s(body.get('review_id'))}: {decision}", _s(body.get("note"))
    if kind == "review.closed":
        return f"review {_s(body.get('review_id'))}: obsolete", f"{_s(body.get('retired'))} retired"
    return None


def history_from_bus(lines: Iterable[str], memory_id: str) -> tuple[MemoryEvent, ...]:
    """The decisions about ``memory_id`` among raw bus lines (JSONL), oldest first.

    Unreadable lines and lines about other memories are skipped: the history is a view of
    the bus, which stays the record.
    """
    import json

    out: list[MemoryEvent] = []
    for raw in lines:
        if memory_id not in raw:  # cheap pre-filter: most lines are about something else
            continue
        try:
            data = json.loads(raw)
        except ValueError:
            continue
        body = data.get("body") if isinstance(data, Mapping) else None
        if not isinstance(body, Mapping):
            continue
        event = _event(_s(data.get("kind")), body, memory_id)
        if event is not None:
            out.append(MemoryEvent(as_datetime(data.get("at")), *event))
    out.sort(key=lambda e: (e.at is None, e.at.timestamp() if e.at else 0.0))
    return tuple(out)
