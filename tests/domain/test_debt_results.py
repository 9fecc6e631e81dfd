"""Plain-language results of debt actions (pure)."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest

from nika_tui.domain.debt_results import NOT_ASKED_AGAIN, changed_nothing, describe_result


class ResultCase(NamedTuple):
    test_id: str
    action: str
    result: dict[str, Any]
    nothing: bool
    says: str


CASES = [
    ResultCase("dedup_merged", "debt.dedup", {"done": True, "rem": {"changed": 4}}, False,
               "merged 4 near-duplicate memories"),
    ResultCase("dedup_across_projects", "dedup", {"done": True, "rem": {"changed": 0}}, True,
               "near-duplicates in different projects are kept apart"),
    ResultCase("rotate_nothing", "rotate_logs", {"done": False, "archived": []}, True,
               "archived nothing"),
    ResultCase("rotate_two", "rotate_logs", {"done": True, "archived": ["a", "b"]}, False,
               "archived 2 bus files"),
    ResultCase("kernel_busy", "trim_working_memory",
               {"done": False, "reason": "the kernel is working: not compacted now"}, False,
               "the kernel is working: not compacted now"),
    ResultCase("failed", "dedup", {"done": False, "error": "redis down", "hint": "nika up"},
               False, "failed: redis down (nika up)"),
    ResultCase("boost", "boost_recency", {"done": True, "recall_tuning": {}}, False,
               "recall now ranks recent memories higher"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_describe_result(case: ResultCase) -> None:
    text = describe_result(case.action, case.result)
    assert case.says in text
    assert "{" not in text  # never raw JSON
    assert changed_nothing(case.action.removeprefix("debt."), case.result) is case.nothing
    assert (NOT_ASKED_AGAIN in text) is case.nothing
