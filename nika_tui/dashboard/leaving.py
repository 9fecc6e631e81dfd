"""What keeps running after the dashboard quits: one line for the terminal it gives back.

Quitting the dashboard stops nothing (DESIGN: the service and the kernels outlive it, agents
keep working); a person who does not know that finds a service and agents running hours later.
"""

from __future__ import annotations

from nika_tui.dashboard.model import Snapshot

RUNNING_STATES = frozenset({"starting", "working", "waiting-input", "idle"})
"""Kernel states of a live tmux session (exited / error / unknown are not running)."""


def still_running(snapshot: Snapshot) -> str:
    """``nika: still running: the memory service, kernels acme (working)…; stop with …``.

    Returns:
        The line, or '' when nothing of nika runs (no service, no kernel).
    """
    kernels = [
        f"{r.tenant_id} ({r.kernel.state})"
        for r in snapshot.tenants
        if r.kernel.state in RUNNING_STATES and not r.kernel.stale
    ]
    parts = ["the memory service"] if snapshot.service_ok else []
    if kernels:
        parts.append(f"{len(kernels)} kernel(s): {', '.join(kernels)}")
    if not parts:
        return ""
    stops = ["`nika down` stops the service"] if snapshot.service_ok else []
    if kernels:
        stops.append("`nika kernel stop TENANT` a kernel")
    return f"nika: still running: {' and '.join(parts)}. {'; '.join(stops)}."
