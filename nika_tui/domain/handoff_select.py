"""Which handoff packet a new context gets: by session and by time, never by similarity.

A packet is written at PreCompact but only *committed* once the compaction happened (the CLI
says so: SessionStart with ``source=compact``, or PostCompact); a refused compaction ("Not
enough messages to compact.") leaves a pending packet that the next PreCompact replaces. A
session that ends (SessionEnd) also commits a packet for the project, so that another agent of
the tenant can start from it.

- After a compaction, the context gets **the newest committed packet of its own session**.
- A new session (startup / resume / clear) gets **the project's newest packet from another
  session**, when it is younger than :data:`HANDOFF_MAX_AGE_S` (an agent that stopped mid-task
  hands off to the next one, whichever CLI it is).
- Each packet is shown **once** per context: its key is remembered with what the session was
  given, and the recall sections never repeat a packet (they skip handoff texts).

Pure: packets, what was shown and ``now`` are arguments.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import asdict, dataclass
from datetime import datetime

HANDOFF_MAX_AGE_S = 24 * 3600.0
"""A packet older than this is history, not a handoff (the memory still holds it)."""


@dataclass(frozen=True, slots=True)
class StoredPacket:
    """A committed handoff packet as kept in Redis."""

    key: str
    """Unique per packet: ``{session}@{created_at}``; what "shown once" remembers."""
    session_id: str
    project_id: str
    cli: str
    created_at: datetime
    reason: str
    """``compaction`` or ``session-end``."""
    text: str

    def to_json(self) -> str:
        """The Redis value."""
        data = asdict(self)
        data["created_at"] = self.created_at.isoformat()
        return json.dumps(data, ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: str | None) -> StoredPacket | None:
        """Parse a Redis value; None when absent or not ours."""
        if not raw:
            return None
        try:
            data = json.loads(raw)
            data["created_at"] = datetime.fromisoformat(data["created_at"])
            return cls(**data)
        except (ValueError, TypeError, KeyError):
            return None


def packet_key(session_id: str, created_at: datetime) -> str:
    """The identity of one packet."""
    return f"{session_id}@{created_at.isoformat()}"


def select_handoff(
    source: str,
    session_id: str,
    own: StoredPacket | None,
    project: StoredPacket | None,
    shown: Collection[str],
    now: datetime,
    max_age_s: float = HANDOFF_MAX_AGE_S,
) -> StoredPacket | None:
    """The packet to inject at a SessionStart, or None.

    Args:
        source: the SessionStart ``source`` (``compact``, ``startup``, ``resume``, ``clear``),
            or ``prompt`` at UserPromptSubmit.
        session_id: the starting context's session.
        own: the newest committed packet of this session.
        project: the newest committed packet of the project (any session, any CLI).
        shown: keys of the packets this context was already given.
        now: the event time.
        max_age_s: how old a cross-session packet may be.
    """
    if source in ("compact", "prompt"):
        # After a compaction: this session's own packet (at SessionStart, or at the next
        # prompt for a CLI that gives no SessionStart after compacting).
        candidate = own
    else:
        candidate = project if project and project.session_id != session_id else None
        if candidate and (now - candidate.created_at).total_seconds() > max_age_s:
            candidate = None
    if candidate is None or candidate.key in shown:
        return None
    return candidate
