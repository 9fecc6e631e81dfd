"""Limits on what a write may carry, checked by every writer (CLI, MCP, hooks via the client).

- NUL bytes: refused. They end C strings in tools that read the stores' files, and no fact
  needs one; hooks strip them from an agent's text instead of dropping the memory.
- ``valid_from`` in the future: refused beyond :data:`FUTURE_SLACK` (clock skew, time zones).
  A fact "valid from 9999-12-31" could never be replaced: nothing newer can exist.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from nika_tui.errors import ValidationFailed

FUTURE_SLACK = timedelta(days=1)


def check_no_nul(text: str, what: str = "the text") -> str:
    """``text``, or :class:`ValidationFailed` if it holds a NUL byte."""
    if "\x00" in text:
        raise ValidationFailed(
            f"{what} contains NUL bytes (\\0)",
            "remove them: binary content does not belong in a memory",
        )
    return text


def check_valid_from(valid_from: datetime, now: datetime) -> datetime:
    """``valid_from``, or :class:`ValidationFailed` when it lies more than a day ahead."""
    if valid_from > now + FUTURE_SLACK:
        raise ValidationFailed(
            f"valid-from {valid_from.isoformat()} is in the future: nothing could ever "
            "supersede such a fact",
            "give the time it became true (today or earlier); omit it for now",
        )
    return valid_from
