"""Which tenants a worker hands over (decision 381): a table of cases, pure."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from nika_tui.engine.rebalance import moves
from nika_tui.engine.worker_keys import preferred


class Case(NamedTuple):
    test_id: str
    holders: dict[str, str | None]
    live: list[str]
    draining: set[str]
    pins: dict[str, str | None]
    expected_count: int
    expected_to: set[str]


FOUR_ON_A = {f"t{i}": "a" for i in range(4)}

CASES = [
    Case("alone: nothing to hand over", FOUR_ON_A, ["a"], set(), {}, 0, set()),
    Case("a new worker: one tenant moves to it", FOUR_ON_A, ["a", "b"], set(), {}, 1, {"b"}),
    Case("3 against 1: one more moves", {**FOUR_ON_A, "t3": "b"}, ["a", "b"], set(), {}, 1, {"b"}),
    Case(
        "2 against 2: balanced",
        {**FOUR_ON_A, "t2": "b", "t3": "b"},
        ["a", "b"],
        set(),
        {},
        0,
        set(),
    ),
    Case("a move under way: wait for it", FOUR_ON_A, ["a", "b"], set(), {"t0": "b"}, 0, set()),
    Case(
        "free tenants do not count as ours",
        {"t0": "a", "t1": None, "t2": None},
        ["a", "b"],
        set(),
        {},
        0,
        set(),
    ),
    Case("draining: everything goes", FOUR_ON_A, ["a", "b", "c"], {"a"}, {}, 4, {"b", "c"}),
    Case("draining, no other worker: nowhere to go", FOUR_ON_A, ["a"], {"a"}, {}, 0, set()),
    Case("never to a draining worker", FOUR_ON_A, ["a", "b"], {"b"}, {}, 0, set()),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_moves(case: Case) -> None:
    out = moves("a", case.holders, case.live, case.draining, case.pins)
    assert len(out) == case.expected_count
    assert set(out.values()) == case.expected_to
    assert all(case.holders[t] == "a" for t in out), "only our own tenants are moved"


def test_draining_sends_each_tenant_to_its_rendezvous_winner() -> None:
    out = moves("a", FOUR_ON_A, ["a", "b", "c"], {"a"}, {})
    assert out == {t: preferred(t, ["b", "c"]) for t in FOUR_ON_A}
