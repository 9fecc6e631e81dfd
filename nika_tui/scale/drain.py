"""Drain before delete: a worker to decommission hands every tenant over first (decision 381).

The worker a scale-out creates runs ``nika serve --join … --worker-id`` :func:`worker_id_for`
its plan, so a decommission knows which worker runs on the instance. :func:`drain` marks it
(:func:`~nika_tui.engine.worker_keys.draining_key`, kept a day after the delete); the worker
then pins each of its tenants to another live worker and releases it (flush, close, shards
published: ``engine/rebalance.py``), and no worker sends it a tenant. The instance is deleted
only once no lease names the worker; a drain that does not finish within its bounded wait
raises and deletes nothing. :func:`drain` waits (the CLI); the service loop never does: it
records the plan as ``draining`` and the leader finishes it (``actions.advance_drains``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import redis

from nika_tui.engine.leases import Leases
from nika_tui.engine.worker_keys import DRAINING_TTL_S, draining_key
from nika_tui.errors import ScaleError


def worker_id_for(plan_id: str) -> str:
    """The worker id of the instance a scale-out plan creates."""
    return f"nika-{plan_id[:12]}"


def tenants_of(r: redis.Redis, worker_id: str) -> list[str]:
    """The tenants whose lease names ``worker_id`` now."""
    leases = Leases(r, "drain", 1)
    return sorted(t for t, h in leases.holders(leases.known_tenants()).items() if h == worker_id)


def drain(
    r: redis.Redis,
    worker_id: str,
    wait_s: float,
    poll_s: float = 0.5,
    monotonic: Callable[[], float] = time.monotonic,
) -> None:
    """Make ``worker_id`` hand its tenants over; return once it holds none.

    A dead worker's leases lapse after their TTL and the others take its tenants, so a worker
    that died also drains. The worker stays marked as draining (it is about to be deleted, and
    must not receive tenants while its instance shuts down).

    Raises:
        ScaleError: it still holds tenants after ``wait_s`` (the mark is cleared: it serves on).
    """
    mark_draining(r, worker_id)
    deadline = monotonic() + wait_s
    while held := tenants_of(r, worker_id):
        if monotonic() >= deadline:
            undrain(r, worker_id)
            raise ScaleError(
                f"worker {worker_id} still holds {', '.join(held)} after {wait_s:.0f}s of "
                "draining; the instance was not deleted",
                "check that another worker is live (`nika scale workers`), then decommission again",
            )
        time.sleep(poll_s)  # each release takes a worker tick: poll the leases, bounded


def mark_draining(r: redis.Redis, worker_id: str) -> None:
    """Mark the worker: it hands its tenants over and receives none (kept a day)."""
    r.set(draining_key(worker_id), "1", ex=DRAINING_TTL_S)


def undrain(r: redis.Redis, worker_id: str) -> None:
    """Clear the draining mark (the drain gave up: the worker serves on)."""
    r.delete(draining_key(worker_id))
