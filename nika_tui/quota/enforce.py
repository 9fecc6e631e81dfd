"""Quotas on a tenant's kernel: its cgroup on spawn and stop, and pausing at the token limit.

``NIKA_QUOTA_CGROUPS=0`` turns the cgroup part off (the test suite does, so that parallel
tests' kernels are not throttled by one another's default plan quotas); the token quota is
always counted. A cgroup that cannot be made is not fatal: the kernel runs, the bus says why,
and the quota falls back to monitoring (``nika doctor``).
"""

from __future__ import annotations

import logging
import os
import signal
from typing import Any

from nika_tui.domain.tenant import TenantConfig
from nika_tui.errors import QuotaError
from nika_tui.quota.cgroups import FALLBACK, CgroupMode, TenantCgroup, descendants, detect
from nika_tui.settings import Settings

log = logging.getLogger("nika.quota")


def limit_kernel(config: TenantConfig, pid: int, settings: Settings) -> dict[str, Any]:
    """Put ``pid`` (the kernel's pane process) and its children in ``nika-tenant-{id}``.

    Returns:
        ``{"enforced": bool, "mode", ...}``: the limits read back, or the reason and fallback.
    """
    if not settings.quota_cgroups:
        return {"enforced": False, "mode": "off", "reason": "NIKA_QUOTA_CGROUPS=0"}
    support = detect()
    if support.mode is CgroupMode.NONE:
        return {"enforced": False, "mode": "none", "reason": support.reason, "fallback": FALLBACK}
    group = TenantCgroup(config.tenant_id, support)
    try:
        limits = group.apply(config.quotas.cpu_percent, config.quotas.ram_mb)
        moved = group.attach(pid)
    except QuotaError as exc:
        log.warning("quota cgroup for %s: %s", config.tenant_id, exc)
        return {"enforced": False, "mode": support.mode.value, "reason": exc.message,
                "fallback": FALLBACK}  # fmt: skip
    return {"enforced": True, "mode": support.mode.value, "cgroup": group.name,
            "pids": moved, **limits}  # fmt: skip


def release_kernel(tenant_id: str, settings: Settings) -> bool:
    """Remove the tenant's cgroup after its kernel stopped; ``False`` when it could not."""
    if not settings.quota_cgroups:
        return False
    support = detect()
    if support.mode is CgroupMode.NONE:
        return False
    try:
        TenantCgroup(tenant_id, support).remove()
    except QuotaError as exc:
        log.warning("quota cgroup of %s not removed: %s", tenant_id, exc)
        return False
    return True


def signal_tree(pid: int, sig: signal.Signals) -> list[int]:
    """Send ``sig`` to ``pid`` and its descendants; return the pids signalled."""
    done: list[int] = []
    for p in [pid, *descendants(pid)]:
        try:
            os.kill(p, sig)
            done.append(p)
        except ProcessLookupError:
            continue
        except PermissionError as exc:
            raise QuotaError(
                f"cannot signal process {p}: not ours", "run as the kernel's user"
            ) from exc
    return done
