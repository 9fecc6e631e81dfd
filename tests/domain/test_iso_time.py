"""The one ISO-8601 reader shared by the audit, REM journal, purge, judge pairs and WM store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import NamedTuple

import pytest

from nika_tui.domain.iso_time import parse_iso_utc


class Case(NamedTuple):
    test_id: str
    value: object
    expected: datetime | None


CASES = [
    Case("aware utc", "2026-03-01T10:00:00+00:00", datetime(2026, 3, 1, 10, tzinfo=UTC)),
    Case("naive is utc", "2026-03-01T10:00:00", datetime(2026, 3, 1, 10, tzinfo=UTC)),
    Case(
        "offset kept",
        "2026-03-01T12:00:00+02:00",
        datetime(2026, 3, 1, 12, tzinfo=timezone(timedelta(hours=2))),
    ),
    Case("empty", "", None),
    Case("none", None, None),
    Case("not a string", 1_700_000_000, None),
    Case("malformed", "yesterday", None),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_parse_iso_utc(case: Case) -> None:
    got = parse_iso_utc(case.value)
    assert got == case.expected
    if got is not None:
        assert got.tzinfo is not None
        assert got.utcoffset() == case.expected.utcoffset()  # type: ignore[union-attr]
