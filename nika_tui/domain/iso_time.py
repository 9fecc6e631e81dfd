"""Reading back the ISO-8601 timestamps nika writes into payloads, streams and journals."""

from __future__ import annotations

from datetime import UTC, datetime


def parse_iso_utc(value: object) -> datetime | None:
    """An aware datetime from an ISO-8601 string, or None when there is none to read.

    Nika writes aware UTC timestamps; a naive one (written by an older version or by hand) is
    taken as UTC rather than refused, so that it still compares with aware ones.

    Args:
        value: Whatever a payload or a stream field holds (only a non-empty string parses).

    Returns:
        The datetime (its own offset kept when it has one), or None for a missing, non-string
        or malformed value.
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        ts = datetime.fromisoformat(value)
    except ValueError:
        return None
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts
