"""The 61% compaction policy for CLIs without a native threshold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import pytest

from nika_tui.domain.compaction import (
    COMPACT_COMMANDS,
    NATIVE_THRESHOLD,
    CompactionAction,
    decide_compaction,
)
from nika_tui.domain.kernel_state import KernelState
from nika_tui.domain.tenant import AgentCli, AutoMode

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
IDLE = KernelState.IDLE


class Case(NamedTuple):
    test_id: str
    fill: float
    state: KernelState
    cli: AgentCli
    mode: AutoMode
    last_request_min_ago: float | None
    action: CompactionAction
    command: str | None


A, C, M, S = CompactionAction, AgentCli, AutoMode, KernelState
CASES = [
    Case("claude-native-never-driven", 90, IDLE, C.CLAUDE_CODE, M.AUTONOMOUS, None, A.NONE, None),
    Case("below-threshold", 60.99, IDLE, C.CODEX, M.AUTONOMOUS, None, A.NONE, None),
    Case("at-threshold", 61.0, IDLE, C.CODEX, M.AUTONOMOUS, None, A.SEND_COMPACT, "/compact"),
    Case(
        "gemini-compress", 75, IDLE, C.GEMINI_CLI, M.AUTONOMOUS, None, A.SEND_COMPACT, "/compress"
    ),
    Case("opencode", 75, IDLE, C.OPENCODE, M.AUTONOMOUS, None, A.SEND_COMPACT, "/compact"),
    Case("shell-standin", 75, IDLE, C.SHELL, M.AUTONOMOUS, None, A.SEND_COMPACT, "/compact"),
    Case("escalate-asks", 75, IDLE, C.CODEX, M.ESCALATE, None, A.REQUEST_CONFIRMATION, "/compact"),
    Case("off-shows-only", 75, IDLE, C.CODEX, M.OFF, None, A.SHOW_ONLY, None),
    Case("off-shows-when-busy", 75, S.WORKING, C.CODEX, M.OFF, None, A.SHOW_ONLY, None),
    Case("busy-waits", 75, S.WORKING, C.CODEX, M.AUTONOMOUS, None, A.NONE, None),
    Case("question-waits", 75, S.WAITING_INPUT, C.CODEX, M.ESCALATE, None, A.NONE, None),
    Case("exited-waits", 75, S.EXITED, C.CODEX, M.AUTONOMOUS, None, A.NONE, None),
    Case("cooldown", 75, IDLE, C.CODEX, M.AUTONOMOUS, 1, A.NONE, None),
    Case("after-cooldown", 75, IDLE, C.CODEX, M.AUTONOMOUS, 10, A.SEND_COMPACT, "/compact"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_decide_compaction(case: Case) -> None:
    last = (
        None
        if case.last_request_min_ago is None
        else NOW - timedelta(minutes=case.last_request_min_ago)
    )
    decision = decide_compaction(case.fill, case.state, case.cli, case.mode, NOW, last)
    assert decision.action is case.action, decision.reason
    assert decision.command == case.command
    assert decision.reason


def test_only_claude_code_has_a_native_threshold() -> None:
    assert {cli for cli, native in NATIVE_THRESHOLD.items() if native} == {"claude-code"}


def test_every_cli_without_native_threshold_has_a_compact_command() -> None:
    for cli, native in NATIVE_THRESHOLD.items():
        if not native:
            assert COMPACT_COMMANDS[cli], cli


def test_modes_accept_their_string_values() -> None:
    decision = decide_compaction(80, IDLE, "codex", "autonomous", NOW)
    assert decision.action is CompactionAction.SEND_COMPACT
