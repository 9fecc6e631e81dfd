"""Valid time: what was current at a date, versions of a chain, ``--as-of`` parsing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple

import pytest

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.memory import MemoryRecord, Status
from nika_tui.domain.timeline import current_at, parse_as_of, versions


def rec(
    mid: str, valid: datetime, nxt: str | None = None, retired: datetime | None = None
) -> MemoryRecord:
    return MemoryRecord(
        id=mid,
        tenant_id="acme",
        text=f"fact {mid}",
        meta=NikaMeta(timestamp=valid),
        status=Status.RETIRED if (nxt or retired) else Status.CURRENT,
        valid_from=valid,
        asserted_at=datetime(2026, 12, 1, tzinfo=UTC),
        retired_at=retired,
        superseded_by=nxt,
        retire_reason="replaced" if nxt else None,
        content_hash=mid,
    )


MAR, JUN, DEC = (datetime(2026, m, 1, tzinfo=UTC) for m in (3, 6, 12))
OLD, NEW = rec("old", MAR, nxt="new", retired=DEC), rec("new", JUN)
GONE = rec("gone", MAR, retired=JUN)


class Case(NamedTuple):
    test_id: str
    record: MemoryRecord
    successor: MemoryRecord | None
    at: datetime
    current: bool


CASES = [
    Case("before-it-was-true", OLD, NEW, datetime(2026, 2, 1, tzinfo=UTC), False),
    Case("while-true-though-retired-later", OLD, NEW, datetime(2026, 4, 1, tzinfo=UTC), True),
    Case("once-its-successor-is-valid", OLD, NEW, JUN, False),
    Case("successor-current-after", NEW, None, datetime(2026, 7, 1, tzinfo=UTC), True),
    Case(
        "retired-without-successor-ends-at-retirement",
        GONE,
        None,
        datetime(2026, 7, 1, tzinfo=UTC),
        False,
    ),
    Case("retired-without-successor-before", GONE, None, datetime(2026, 4, 1, tzinfo=UTC), True),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_current_at(case: Case) -> None:
    assert current_at(case.record, case.successor, case.at) is case.current


def test_versions_name_what_replaced_each_and_until_when() -> None:
    [first, second] = versions([NEW, OLD])
    assert (first.record.id, first.valid_until, first.replaced_by, first.why) == (
        "old",
        JUN,
        NEW,
        "replaced",
    )
    assert (second.record.id, second.valid_until, second.replaced_by) == ("new", None, None)


def test_parse_as_of() -> None:
    assert parse_as_of("2026-03-15") == datetime(2026, 3, 15, 23, 59, 59, 999999, tzinfo=UTC)
    assert parse_as_of("2026-03-15T09:30Z") == datetime(2026, 3, 15, 9, 30, tzinfo=UTC)
    with pytest.raises(ValueError, match="2026-03-15"):
        parse_as_of("last March")
