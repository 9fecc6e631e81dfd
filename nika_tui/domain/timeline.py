"""Memory across valid time: what was current at a date, and how one fact changed.

Pure functions over :class:`MemoryRecord` chains; the engine loads the records.

A memory is **current at D** when it had become true (``valid_from ≤ D``) and nothing had yet
replaced it at D: its successor (``superseded_by``) was not yet valid at D. A memory retired
without a successor (retired with a reason, e.g. by a person or an agent) stopped at its
``retired_at``. This is valid time, not transaction time: a fact imported today with a March
timestamp answers "what was true in March" even though we learnt it today.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import Any

from nika_tui.domain.memory import MemoryRecord


def parse_as_of(value: str) -> datetime:
    """An ``--as-of`` value: a date (end of that day, UTC) or an ISO-8601 time.

    Raises:
        ValueError: not a date or time (the message names the accepted forms).
    """
    text = value.strip()
    try:
        day = date.fromisoformat(text)
    except ValueError:
        pass
    else:
        if len(text) <= 10:
            # "as of 2026-03-15" means what held during that day, so its end.
            return datetime.combine(day, time(23, 59, 59, 999999), tzinfo=UTC)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{value!r} is not a date or time; use e.g. 2026-03-15 or 2026-03-15T09:30Z"
        ) from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def valid_until(record: MemoryRecord, successor: MemoryRecord | None) -> datetime | None:
    """When ``record`` stopped being true (None: still true).

    Its successor's valid time when it was superseded (never before its own start), else its
    retirement time when it was retired without a successor.
    """
    if successor is not None:
        return max(successor.valid_from, record.valid_from)
    if record.retired_at is not None:
        return max(record.retired_at, record.valid_from)
    return None


def current_at(record: MemoryRecord, successor: MemoryRecord | None, as_of: datetime) -> bool:
    """True when ``record`` was the current version at ``as_of`` (see the module docstring).

    A superseded record whose successor could not be loaded counts as ended at its retirement.
    """
    if record.valid_from > as_of:
        return False
    end = valid_until(record, successor)
    return end is None or end > as_of


@dataclass(frozen=True, slots=True)
class Version:
    """One version of a fact in a timeline."""

    record: MemoryRecord
    valid_until: datetime | None
    replaced_by: MemoryRecord | None
    why: str | None

    def to_json(self) -> dict[str, object]:
        """JSON-ready dict."""
        return {
            "id": self.record.id,
            "text": self.record.text,
            "status": self.record.status.value,
            "valid_from": self.record.valid_from.isoformat(),
            "valid_until": self.valid_until.isoformat() if self.valid_until else None,
            "replaced_by": self.replaced_by.id if self.replaced_by else None,
            "replaced_by_text": self.replaced_by.text if self.replaced_by else None,
            "why": self.why,
            "source": self.record.meta.source,
            "project_id": self.record.meta.project_id,
        }


def versions(chain: Sequence[MemoryRecord]) -> list[Version]:
    """The versions of one supersede chain, oldest valid time first."""
    by_id: Mapping[str, MemoryRecord] = {r.id: r for r in chain}
    out: list[Version] = []
    for rec in sorted(chain, key=lambda r: (r.valid_from, r.asserted_at, r.id)):
        successor = by_id.get(rec.superseded_by) if rec.superseded_by else None
        out.append(Version(rec, valid_until(rec, successor), successor, rec.retire_reason))
    return out


def format_timelines(out: dict[str, Any]) -> list[str]:
    """Human lines: one block per fact, one line per version (oldest first)."""
    if not out.get("timelines"):
        return [str(out.get("palace") or f"no memory for {out.get('query', '')}")]
    lines: list[str] = []
    snapshots = list(out.get("snapshots") or [])
    for n, versions in enumerate(out["timelines"], start=1):
        if n > 1:
            lines.append("")
        if n <= len(snapshots) and snapshots[n - 1] and versions:
            lines += earlier_lines(snapshots[n - 1], str(versions[0]["id"]))
        for v in versions:
            until = f" until {v['valid_until'][:16]}" if v["valid_until"] else " (current)"
            lines.append(f"{v['valid_from'][:16]}{until}  [{v['id']}]  {v['text']}")
            if v["replaced_by"]:
                lines.append(f"    replaced by [{v['replaced_by']}]: {v['replaced_by_text']}")
            if v["why"]:
                lines.append(f"    why: {v['why']}")
            if v["source"]:
                lines.append(f"    source: {v['source']}")
    return lines


def earlier_lines(snapshots: list[str], memory_id: str) -> list[str]:
    """Where a chain cut by a fresh start goes on: one line per snapshot, with the command."""
    return [
        f"older versions are in snapshot {path}: nika snapshot history {path} {memory_id}"
        for path in snapshots
    ]
