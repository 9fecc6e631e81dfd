"""The status-bar line of a running reset names its tenant and says the others go on (#22)."""

from __future__ import annotations

import json
from typing import NamedTuple

import pytest

from nika_tui.dashboard.writes_paused import paused_line


class Case(NamedTuple):
    test_id: str
    raw: object
    expected: str | None


MARK = {"op": "compress.reset", "tenant_id": "acme", "stage": "build",
        "since": "2026-12-04T14:05:09+00:00", "pid": 1, "host": "h"}  # fmt: skip
CASES = [
    Case("no reset", None, None),
    Case("empty", "", None),
    Case("not json", "{", "memory writes of a tenant paused by a reset — they wait in the stream"),
    Case(
        "a reset of acme",
        json.dumps(MARK),
        "memory writes of acme paused: reset running (stage build, since 14:05 UTC) — its "
        "writes wait in the stream and are stored after it, nothing is lost; other tenants' "
        "writes go on",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_paused_line(case: Case) -> None:
    assert paused_line(case.raw) == case.expected
