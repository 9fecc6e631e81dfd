"""What keeps running after the dashboard quits: one line for the terminal it gives back.

Quitting the dashboard stops nothing (DESIGN: the service and the kernels outlive it, agents
keep working); a person who does not know that finds a service and agents running hours later.
"""

from __future__ import annotations

from nika_tui.dashboard.model import Snapshot

RUNNING_STATES = frozenset({"starting", "working", "waiting-input", "idle"})
"""Kernel states of a live tmux session (exited / error / unknown are not running)."""


def still_running(snapshot: Snapshot, embedded_redis: bool = False) -> str:
    """``nika: still running: the memory service, kernels acme (working)…; stop with …``.

    Args:
        snapshot: The latest overview snapshot.
        embedded_redis: True when the dashboard reads nika's embedded Redis (no ``REDIS_URL``):
            it keeps running too, and only ``nika down --redis`` stops it.

    Returns:
        The line, or '' when nothing of nika runs (no service, no kernel, no embedded Redis).
    """
    kernels = [
        f"{r.tenant_id} ({r.kernel.state})"
        for r in snapshot.tenants
        if r.kernel.state in RUNNING_STATES and not r.kernel.stale
    ]
    redis = embedded_redis and snapshot.redis_ok
    parts = ["the memory service"] if snapshot.service_ok else []
    if redis:
        parts.append("the embedded Redis")
    if kernels:
        parts.append(f"{len(kernels)} kernel(s): {', '.join(kernels)}")
    if not parts:
        return ""
    stops = ["`nika down` stops the service"] if snapshot.service_ok else []
    if redis:
        # Plain `nika down` leaves Redis up: only --redis stops it.
        down_redis = "`nika down --redis`"
        stops.append(f"{down_redis} Redis too" if stops else f"{down_redis} stops Redis")
    if kernels:
        stops.append("`nika kernel stop TENANT` a kernel")
    running = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]
    return f"nika: still running: {running}. {'; '.join(stops)}."
