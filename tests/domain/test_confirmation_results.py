"""Plain-language results of approved confirmations, every kind (pure)."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from nika_tui.domain.confirmation_results import describe_confirmation


class Case(NamedTuple):
    test_id: str
    kind: str
    result: object
    says: str


# Each result is the shape approving that kind returns (engine/kernels/confirmations.resolve).
CASES = [
    Case("compact", "compact", {"command": "/compact"}, "typed /compact in the agent's pane"),
    Case("rem_changed", "rem.run", {"tenants": {"acme": {"run_id": "r1", "changed": 3}}},
         "the REM pass applied 3 changes"),
    Case("rem_nothing", "rem.run", {"tenants": {"acme": {"changed": 0}}},
         "the REM pass changed nothing"),
    Case("reset", "compress.reset", {"generation": "g2", "live_points_after": 40},
         "fresh store (generation g2)"),
    Case("tune", "tune.adopt", {"adopted": {"k": 8, "alpha": 0.3}},
         "recall parameters adopted: k=8, alpha=0.3"),
    Case("scale", "scale.apply",
         {"kind": "scale_out", "status": "applied", "provider": "scaleway", "instance_id": "i-9"},
         "scale out applied (scaleway/i-9)"),
    Case("orphan", "scale.orphan", {"removed": {"provider": "runpod", "instance_id": "p-1"}},
         "removed the untracked worker runpod/p-1"),
    Case("pause", "quota.pause", {"paused_pids": [11, 12]}, "paused 2 processes of the kernel"),
    Case("pause_none", "quota.pause", {"paused_pids": []}, "paused nothing"),
    Case("purge", "purge.apply",
         {"removed": ["m-1", "m-2"], "skipped": ["m-3"], "removed_count": 2, "skipped_count": 1},
         "purged 2 retired memories from the live index (archived, restorable); 1 skipped"),
    Case("debt", "debt.dedup", {"result": {"done": True, "rem": {"changed": 4}}},
         "merged 4 near-duplicate memories"),
    Case("error", "purge.apply", {"error": "index busy", "hint": "retry"},
         "failed: index busy (retry)"),
    Case("unknown_kind", "new.kind", {"x": 1}, '{"x": 1}'),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.test_id)
def test_describe_confirmation(case: Case) -> None:
    said = describe_confirmation(case.kind, case.result)
    assert case.says in said
    if case.kind != "new.kind":
        assert "{" not in said  # words, not the raw JSON the toast showed


def test_no_result_says_nothing() -> None:
    assert describe_confirmation("compact", None) == ""
