"""The state of one tenant's kernel (its agent CLI in a tmux session), as the dashboard shows it.

A state always records which *source* decided it: an agent hook (authoritative while fresh), the
pane fallback (``capture-pane`` + per-CLI patterns), or nika itself (spawn, stop, and tmux
reporting that the process or session is gone). A kernel whose heartbeat lapsed is *stale*:
nothing has confirmed it alive for a while, so its last state may be out of date.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class KernelState(StrEnum):
    """What the agent is doing."""

    STARTING = "starting"  # spawned, no output and no hook yet
    WORKING = "working"  # busy on a turn (spinner, "esc to interrupt", a hook said so)
    WAITING_INPUT = "waiting-input"  # blocked on a human: permission prompt, question
    IDLE = "idle"  # at its prompt, ready for the next request
    EXITED = "exited"  # the agent quit (or was stopped); the session is gone or dead
    ERROR = "error"  # it could not start, or died abnormally (see ``reason``)


LIVE_STATES: frozenset[KernelState] = frozenset(
    {KernelState.STARTING, KernelState.WORKING, KernelState.WAITING_INPUT, KernelState.IDLE}
)
"""States in which a process is expected to be running (and a heartbeat expected)."""


class StateSource(StrEnum):
    """Who decided the current state."""

    HOOK = "hook"  # an agent hook event (UserPromptSubmit, Stop, Notification, …)
    PANE = "pane"  # the pane fallback: capture-pane matched a per-CLI pattern
    MANAGER = "manager"  # nika itself: spawn, stop, or tmux reporting the pane/session gone


class AgentStatus(BaseModel):
    """One agent CLI of a kernel (one tmux window per agent), as ``nika kernel list`` shows it."""

    model_config = ConfigDict(extra="forbid")

    agent: str = Field(description="The agent CLI kind, also the name of its tmux window.")
    state: KernelState
    source: StateSource
    state_at: datetime | None = None
    reason: str = Field(default="", description="Why this agent exited or failed.")


COMBINE_ORDER: tuple[KernelState, ...] = (
    KernelState.WAITING_INPUT,
    KernelState.WORKING,
    KernelState.STARTING,
    KernelState.IDLE,
    KernelState.ERROR,
    KernelState.EXITED,
)
"""The kernel shows the first of these that any of its agents is in: a person is needed first,
then busy; exited only when every agent has exited (an error among them wins over a clean exit).
"""


def combine_states(states: Iterable[KernelState]) -> KernelState | None:
    """The state of a kernel from the states of its agents (see :data:`COMBINE_ORDER`).

    Args:
        states: each agent window's state.

    Returns:
        The combined state, or None when there are no agents.
    """
    present = set(states)
    return next((state for state in COMBINE_ORDER if state in present), None)


class KernelStatus(BaseModel):
    """One kernel's status, as stored in Redis and shown by ``nika kernel list``."""

    model_config = ConfigDict(extra="forbid")

    tenant_id: str
    state: KernelState
    source: StateSource
    pid: int | None = Field(default=None, description="Pid of the agent process in the pane.")
    cli: str = Field(default="", description="Agent CLI kind (claude-code, codex, …).")
    session: str = Field(default="", description="tmux session name.")
    started_at: datetime | None = None
    state_at: datetime | None = Field(default=None, description="When the state was decided.")
    last_event: str = Field(default="", description="Last hook event or manager action.")
    last_event_at: datetime | None = None
    reason: str = Field(default="", description="Why it exited or failed (status, last line).")
    heartbeat_age_s: float | None = Field(
        default=None, description="Seconds since the last heartbeat; None when it lapsed."
    )
    stale: bool = Field(default=False, description="A live state whose heartbeat lapsed.")
    pod_ttfl_s: float | None = Field(
        default=None, description="Seconds from spawn to the first output line (last spawn)."
    )
    agents: list[AgentStatus] = Field(
        default_factory=list,
        description="Each agent window's own state, first window first; ``state`` combines them.",
    )


def is_stale(state: KernelState, heartbeat_present: bool) -> bool:
    """A kernel is stale when it should be alive but nothing refreshed its heartbeat.

    Args:
        state: the recorded state.
        heartbeat_present: whether the heartbeat key still exists (it has a TTL).

    Returns:
        True for a live state without a heartbeat; exited/error kernels are never stale.
    """
    return state in LIVE_STATES and not heartbeat_present


HOOK_EVENT_STATES: dict[str, KernelState] = {
    # Claude Code hook events
    "UserPromptSubmit": KernelState.WORKING,
    "PreToolUse": KernelState.WORKING,
    "PostToolUse": KernelState.WORKING,
    "Stop": KernelState.IDLE,
    "Notification": KernelState.WAITING_INPUT,
    "SessionStart": KernelState.IDLE,
    "SessionEnd": KernelState.EXITED,
    # Gemini CLI hook events (PreCompress is recorded as PreCompact when a compression runs)
    "BeforeAgent": KernelState.WORKING,
    "AfterAgent": KernelState.IDLE,
    "AfterTool": KernelState.WORKING,
    # Codex ``notify`` payload type
    "agent-turn-complete": KernelState.IDLE,
}
"""Which state each hook event implies. PreCompact and unknown events change no state."""

_NON_BLOCKING_NOTIFICATIONS = frozenset({"auth_success"})


def state_for_hook_event(
    event: str, payload: Mapping[str, Any] | None = None
) -> KernelState | None:
    """The state a hook event implies, or None when it implies none.

    Args:
        event: the hook event name (Claude Code's, or Codex's notify type).
        payload: the hook's JSON payload, when it refines the event (Notification type,
            SessionStart source).

    Returns:
        A :class:`KernelState` or None.
    """
    payload = payload or {}
    if event == "Notification":
        if str(payload.get("notification_type", "")) in _NON_BLOCKING_NOTIFICATIONS:
            return None
        return KernelState.WAITING_INPUT
    if event == "SessionStart" and payload.get("source") == "compact":
        # An automatic compaction happens mid-turn: the agent goes on working afterwards.
        return KernelState.WORKING
    return HOOK_EVENT_STATES.get(event)
