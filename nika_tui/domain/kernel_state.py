"""The state of one tenant's kernel (its agent CLI in a tmux session), as the dashboard shows it.

A state always records which *source* decided it: an agent hook (authoritative while fresh), the
pane fallback (``capture-pane`` + per-CLI patterns), or nika itself (spawn, stop, and tmux
reporting that the process or session is gone). A kernel whose heartbeat lapsed is *stale*:
nothing has confirmed it alive for a while, so its last state may be out of date.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

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


def is_stale(state: KernelState, heartbeat_present: bool) -> bool:
    """A kernel is stale when it should be alive but nothing refreshed its heartbeat.

    Args:
        state: the recorded state.
        heartbeat_present: whether the heartbeat key still exists (it has a TTL).

    Returns:
        True for a live state without a heartbeat; exited/error kernels are never stale.
    """
    return state in LIVE_STATES and not heartbeat_present
