"""The memory browser's parsing, filter and chain rules (pure, tables of cases)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import NamedTuple

import pytest

from nika_tui.dashboard.leaving import still_running
from nika_tui.dashboard.memory_parse import (
    chain_from_history,
    chain_of,
    history_from_bus,
    matches,
    parse_memory,
    parse_memory_list,
)
from nika_tui.dashboard.memory_views import MemoryFilter, MemoryView
from nika_tui.dashboard.model import KernelView, Snapshot, TenantRow


def _at(month: int, day: int = 1) -> datetime:
    return datetime(2026, month, day, tzinfo=UTC)


OLD = MemoryView("m-1", "VAT once per order", "semantic", "shop", "retired", _at(3), _at(6))
OLD = replace(OLD, superseded_by="m-2")
NEW = MemoryView("m-2", "VAT per line", "semantic", "shop", "current", _at(6))
REVIEW = MemoryView(
    "m-3", "Staging is s-2", "episodic", "infra", "in review", _at(1), review_id="r1"
)


class Case(NamedTuple):
    test_id: str
    flt: MemoryFilter
    ids: list[str]


CASES = [
    Case("everything", MemoryFilter(), ["m-1", "m-2", "m-3"]),
    Case("text, any case", MemoryFilter(text="vat"), ["m-1", "m-2"]),
    Case("an exact id", MemoryFilter(text="m-3"), ["m-3"]),
    Case("layer", MemoryFilter(layer="episodic"), ["m-3"]),
    Case("project", MemoryFilter(project="shop"), ["m-1", "m-2"]),
    Case("retired", MemoryFilter(status="retired"), ["m-1"]),
    Case("current keeps what is in review", MemoryFilter(status="current"), ["m-2", "m-3"]),
    Case("in review", MemoryFilter(status="review"), ["m-3"]),
    Case("as of April: the old rule", MemoryFilter(as_of=_at(4)), ["m-1", "m-3"]),
    Case("as of July: the new rule", MemoryFilter(as_of=_at(7)), ["m-2", "m-3"]),
    Case("as of the switch: the new one", MemoryFilter(as_of=_at(6)), ["m-2", "m-3"]),
    Case("before anything", MemoryFilter(as_of=datetime(2025, 1, 1, tzinfo=UTC)), []),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.test_id)
def test_filter(case: Case) -> None:
    assert [m.id for m in (OLD, NEW, REVIEW) if matches(m, case.flt)] == case.ids


def test_chain_of_walks_back_and_forward() -> None:
    for start in ("m-1", "m-2"):
        chain = chain_of(start, [NEW, REVIEW, OLD])
        assert [(v.memory.id, v.replaced_by) for v in chain] == [("m-1", "m-2"), ("m-2", "")]
    assert [v.memory.id for v in chain_of("m-3", [OLD, NEW, REVIEW])] == ["m-3"]


def test_parse_a_list_reply_and_an_unreadable_record() -> None:
    record = {
        "id": "m-9",
        "text": "t",
        "layer": "semantic",
        "status": "current",
        "valid_from": "2026-03-01T00:00:00+00:00",
        "review_id": "r-9",
        "meta": {"agent_type": "codex", "session_id": "s", "trigger": "Stop", "source": "a:1"},
    }
    listing = parse_memory_list("acme", {"records": [record, "garbage"], "total": 7})
    good, bad = listing.memories
    assert (good.status, good.agent, good.hook, good.source) == (
        "in review",
        "codex",
        "Stop",
        "a:1",
    )
    assert bad.status == "unreadable" and listing.total == 7
    assert parse_memory_list("acme", None).memories == ()


def test_chain_from_history_gives_each_version_its_end() -> None:
    old = {"id": "a", "text": "x", "status": "retired", "valid_from": "2026-03-01T00:00:00Z"}
    old |= {"superseded_by": "b", "retired_at": "2026-09-01T00:00:00Z"}
    new = {"id": "b", "text": "y", "status": "current", "valid_from": "2026-06-01T00:00:00Z"}
    chain = chain_from_history([new, old])
    assert [v.memory.id for v in chain] == ["a", "b"]
    # Valid time: the old one ended when its successor became true, not when it was retired.
    assert chain[0].memory.valid_until == _at(6) and chain[1].memory.valid_until is None
    alone = parse_memory({**old, "superseded_by": None})
    assert chain_from_history([{**old, "superseded_by": None}])[0].memory.valid_until == _at(9)
    assert alone.status == "retired"


def _row(tenant: str, state: str, stale: bool = False) -> TenantRow:
    return TenantRow(tenant, kernel=KernelView(state=state, stale=stale))


class Leaving(NamedTuple):
    test_id: str
    service_ok: bool
    rows: tuple[TenantRow, ...]
    expected: list[str]
    absent: list[str]
    embedded_redis: bool = False


LEAVING = [
    Leaving("nothing runs", False, (_row("a", "exited"),), [], ["still running"]),
    Leaving(
        "service only", True, (_row("a", "exited"),), ["memory service", "nika down"], ["kernel"]
    ),
    Leaving(
        "service and a working kernel",
        True,
        (_row("a", "working"), _row("b", "idle", stale=True)),
        ["memory service", "1 kernel(s): a (working)", "nika kernel stop"],
        ["b (idle)"],
    ),
    Leaving(
        "a kernel without service", False, (_row("a", "waiting-input"),), ["a (waiting"], ["down"]
    ),
    # The embedded Redis outlives the dashboard too, and plain `nika down` leaves it up.
    Leaving(
        "service and the embedded Redis",
        True,
        (),
        ["the memory service and the embedded Redis", "`nika down --redis` Redis too"],
        ["kernel"],
        embedded_redis=True,
    ),
    Leaving(
        "the embedded Redis alone",
        False,
        (),
        ["still running: the embedded Redis.", "`nika down --redis` stops Redis"],
        ["service"],
        embedded_redis=True,
    ),
]


@pytest.mark.parametrize("case", LEAVING, ids=lambda c: c.test_id)
def test_still_running_line(case: Leaving) -> None:
    snapshot = Snapshot(_at(1), case.rows, service_ok=case.service_ok)
    line = still_running(snapshot, embedded_redis=case.embedded_redis)
    for text in case.expected:
        assert text in line
    for text in case.absent:
        assert text not in line
    assert (line == "") == (not case.expected)


def test_an_external_or_unreachable_redis_is_not_named_on_leaving() -> None:
    # REDIS_URL (not ours to stop) or a Redis that does not answer: nothing to say about it.
    assert still_running(Snapshot(_at(1), service_ok=False), embedded_redis=False) == ""
    down = Snapshot(_at(1), service_ok=False, redis_ok=False)
    assert still_running(down, embedded_redis=True) == ""


def _line(kind: str, at: str, **body: object) -> str:
    import json

    return json.dumps({"kind": kind, "at": at, "body": body})


def test_history_keeps_the_decisions_about_one_memory_with_their_reasons() -> None:
    lines = [
        _line("review.requested", "2026-12-02T10:00:00+00:00", review_id="r1", old_id="m-1",
              new_id="m-2", reason="may conflict"),
        _line("memory.restored", "2026-12-02T12:00:00+00:00", memory_id="m-1",
              reason="person: it came back"),
        _line("memory.retired", "2026-12-02T11:00:00+00:00", memory_id="m-1",
              superseded_by="m-2", reason="person: wrong"),
        _line("memory.retired", "2026-12-02T11:00:00+00:00", memory_id="m-9", reason="other"),
        _line("review.resolved", "2026-12-02T10:30:00+00:00", review_id="r1", old_id="m-1",
              new_id="m-2", decision="keep", note=""),
        "not json m-1",
    ]  # fmt: skip
    assert [(e.what, e.why) for e in history_from_bus(lines, "m-1")] == [
        ("queued for review r1", "may conflict"),
        ("review r1: keep", ""),
        ("retired, superseded by m-2", "person: wrong"),
        ("restored", "person: it came back"),
    ]
    # The new side of a pair has the review in its history too.
    assert [e.what for e in history_from_bus(lines, "m-2")] == [
        "queued for review r1",
        "review r1: keep",
    ]
