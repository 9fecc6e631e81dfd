"""Redis keys of the memory-service workers, and who is live (see ``engine/worker.py``)."""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Sequence
from pathlib import Path

import redis

from nika_tui.services.redis_keys import PREFIX

PRIMARY_ID = "memory-service"
"""The primary ``nika serve``'s worker id: the consumer name the service always used."""
LEASE_TTL_S = 15.0
WORKERS = f"{PREFIX}:workers"
DRAINING_TTL_S = 86_400
"""How long a drained worker stays marked: past its instance's delete, it is gone."""


def draining_key(worker_id: str) -> str:
    """Set while the worker is decommissioned: it hands every tenant over, receives none
    (decision 381); kept after the delete (with a TTL) so a worker still running never
    receives tenants again."""
    return f"{PREFIX}:worker:draining:{worker_id}"


def alive_key(worker_id: str) -> str:
    """The worker's heartbeat (TTL: the lease TTL)."""
    return f"{PREFIX}:worker:alive:{worker_id}"


def info_key(worker_id: str) -> str:
    """The worker's host, data dir and pid (kept after it dies: its shards are found there)."""
    return f"{PREFIX}:worker:info:{worker_id}"


def inbox_key(worker_id: str) -> str:
    """Set when entries were handed to the worker: it drains its pending entries."""
    return f"{PREFIX}:worker:inbox:{worker_id}"


def home_key(tenant_id: str) -> str:
    """The worker whose data dir holds the tenant's newest shards."""
    return f"{PREFIX}:lease:home:{tenant_id}"


def pin_key(tenant_id: str) -> str:
    """``nika scale move``: the worker the tenant should move to (kept until it got there)."""
    return f"{PREFIX}:lease:pin:{tenant_id}"


def default_worker_id(data: Path) -> str:
    """A stable id per host and data dir, so a restarted worker finds its own pending entries."""
    digest = hashlib.sha256(str(data.resolve()).encode()).hexdigest()[:8]
    return f"{socket.gethostname()}-{digest}"


def live_workers(r: redis.Redis) -> list[str]:
    """Registered workers whose heartbeat is fresh."""
    ids = sorted(str(w) for w in r.smembers(WORKERS))
    pipe = r.pipeline(transaction=False)
    for worker_id in ids:
        pipe.exists(alive_key(worker_id))
    return [w for w, alive in zip(ids, pipe.execute(), strict=True) if alive]


def preferred(tenant_id: str, workers: Sequence[str]) -> str:
    """Rendezvous hashing: the worker that should hold a free tenant."""
    return max(workers, key=lambda w: hashlib.sha256(f"{tenant_id}|{w}".encode()).digest())
