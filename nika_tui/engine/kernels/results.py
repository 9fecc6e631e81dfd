"""What the kernel manager's lifecycle calls return, and the tmux session name of a tenant."""

from __future__ import annotations

from dataclasses import dataclass, field

from nika_tui.errors import KernelError

SESSION_PREFIX = "nika-tenant-"


def session_name(tenant_id: str) -> str:
    """``nika-tenant-{tenant_id}``."""
    return f"{SESSION_PREFIX}{tenant_id}"


@dataclass(frozen=True, slots=True)
class SpawnResult:
    """Outcome of :meth:`KernelManager.spawn`."""

    tenant_id: str
    session: str
    spawned: bool
    message: str
    pid: int | None = None
    pod_ttfl_s: float | None = None
    command: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class StopResult:
    """Outcome of :meth:`KernelManager.stop`."""

    tenant_id: str
    session: str
    stopped: bool
    forced: bool
    message: str


@dataclass(frozen=True, slots=True)
class RestartResult:
    """Outcome of :meth:`KernelManager.restart`."""

    stop: StopResult
    spawn: SpawnResult
    recall: str


def not_running(tenant_id: str) -> KernelError:
    return KernelError(
        f"kernel {tenant_id} is not running", f"start it with `nika kernel spawn {tenant_id}`"
    )


@dataclass(frozen=True, slots=True)
class AttachTarget:
    """Which agent window ``nika kernel attach`` shows, why, and the argv that attaches."""

    agent: str
    why: str
    command: list[str]
