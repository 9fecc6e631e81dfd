"""The 61% compaction policy for CLIs that have no native threshold (pure).

The seed compacts the working memory at 61% fill. Claude Code does it by itself once
``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=61`` is in its environment, so nika only shows its fill. For
every other CLI nika decides: when the fill reaches the threshold *and the kernel is idle* (typing
into a busy agent would interleave with its turn, and a question on screen is the human's), the
tenant's ``auto_actions.compact`` mode picks the action:

- ``autonomous`` → send the CLI's compact command through tmux;
- ``escalate``   → queue a confirmation for the dashboard;
- ``off``        → show it only.

A cooldown after the last request keeps one crossing from sending the command (or asking) again
while the transcript has not yet caught up with the compaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from nika_tui.domain.agent_cli_table import AGENT_CLIS
from nika_tui.domain.kernel_state import KernelState
from nika_tui.domain.tenant import AgentCli, AutoMode

COMPACT_THRESHOLD_PERCENT = 61.0
"""The seed's threshold (« compactée automatiquement à 61 % »)."""
DEFAULT_COOLDOWN = timedelta(minutes=5)

COMPACT_COMMANDS: dict[str, str | None] = {
    cli.value: spec.compact_command for cli, spec in AGENT_CLIS.items()
}
"""Per-CLI compact command typed into the pane (``/compact``, Gemini's ``/compress``…)."""
NATIVE_THRESHOLD: dict[str, bool] = {
    cli.value: spec.native_compact_threshold for cli, spec in AGENT_CLIS.items()
}
"""CLIs that compact by themselves at the threshold nika exports (Claude Code)."""


class CompactionAction(StrEnum):
    """What to do about one kernel's fill."""

    NONE = "none"  # below threshold, busy, native, in cooldown, or nothing to send
    SEND_COMPACT = "send-compact"  # type the compact command into the pane
    REQUEST_CONFIRMATION = "request-confirmation"  # ask a human on the dashboard
    SHOW_ONLY = "show-only"  # over threshold, mode off: display it


@dataclass(frozen=True, slots=True)
class CompactionDecision:
    """The action, the command to type (for SEND_COMPACT) and why."""

    action: CompactionAction
    reason: str
    command: str | None = None


def decide_compaction(
    fill_percent: float,
    state: KernelState,
    cli: AgentCli | str,
    mode: AutoMode | str,
    now: datetime,
    last_request_at: datetime | None = None,
    threshold: float = COMPACT_THRESHOLD_PERCENT,
    cooldown: timedelta = DEFAULT_COOLDOWN,
) -> CompactionDecision:
    """Decide what the compaction policy does for one kernel right now.

    Args:
        fill_percent: current working-memory fill (0–100).
        state: the kernel's current state.
        cli: the agent CLI kind.
        mode: the tenant's ``auto_actions.compact`` mode.
        now: the current time (the policy reads no clock).
        last_request_at: when a compaction was last sent or asked for, if ever.
        threshold: fill percentage that triggers the policy.
        cooldown: how long after a request the policy stays quiet.

    Returns:
        A :class:`CompactionDecision`.
    """
    cli_value = AgentCli(cli).value
    mode = AutoMode(mode)
    if NATIVE_THRESHOLD.get(cli_value, False):
        return CompactionDecision(CompactionAction.NONE, f"{cli_value} compacts by itself")
    if fill_percent < threshold:
        return CompactionDecision(
            CompactionAction.NONE, f"fill {fill_percent:.1f}% is below {threshold:g}%"
        )
    if mode is AutoMode.OFF:
        return CompactionDecision(
            CompactionAction.SHOW_ONLY, f"fill {fill_percent:.1f}% ≥ {threshold:g}%, auto off"
        )
    if state is not KernelState.IDLE:
        return CompactionDecision(
            CompactionAction.NONE, f"waiting for the kernel to be idle (it is {state.value})"
        )
    if last_request_at is not None and now - last_request_at < cooldown:
        return CompactionDecision(CompactionAction.NONE, "a compaction was requested recently")
    command = COMPACT_COMMANDS.get(cli_value)
    if command is None:
        return CompactionDecision(CompactionAction.SHOW_ONLY, f"{cli_value} has no compact command")
    if mode is AutoMode.AUTONOMOUS:
        return CompactionDecision(
            CompactionAction.SEND_COMPACT,
            f"fill {fill_percent:.1f}% ≥ {threshold:g}% and idle",
            command,
        )
    return CompactionDecision(
        CompactionAction.REQUEST_CONFIRMATION,
        f"fill {fill_percent:.1f}% ≥ {threshold:g}% and idle: compact with {command}?",
        command,
    )
