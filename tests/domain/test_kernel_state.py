"""How a kernel's state follows from its agents' states (one tmux window per agent)."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from nika_tui.domain.kernel_state import KernelState, combine_states

S = KernelState


class Case(NamedTuple):
    test_id: str
    agents: list[KernelState]
    kernel: KernelState | None


CASES = [
    Case("one agent is the kernel", [S.IDLE], S.IDLE),
    Case("working if any works", [S.IDLE, S.WORKING], S.WORKING),
    Case("a question beats work", [S.WORKING, S.WAITING_INPUT], S.WAITING_INPUT),
    Case("a live agent keeps the kernel alive", [S.EXITED, S.IDLE], S.IDLE),
    Case("a starting agent is not idle yet", [S.STARTING, S.IDLE], S.STARTING),
    Case("exited only when all have", [S.EXITED, S.EXITED], S.EXITED),
    Case("an error among the dead shows", [S.EXITED, S.ERROR], S.ERROR),
    Case("no agents, no state", [], None),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_combine_states(case: Case) -> None:
    assert combine_states(case.agents) is case.kernel
