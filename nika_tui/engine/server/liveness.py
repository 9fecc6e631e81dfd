"""The memory service's liveness: its heartbeat in Redis and the single-instance check.

``SERVICE_HEARTBEAT`` holds ``{pid, host, started_at}`` with a TTL of :data:`HEARTBEAT_TTL_S`,
refreshed every :data:`HEARTBEAT_EVERY_S` by the loop; `nika up` and the clients wait for it.
"""

from __future__ import annotations

import json
import os
import socket

import redis

from nika_tui.errors import NikaError
from nika_tui.services import redis_keys
from nika_tui.services.liveness import process_alive

HEARTBEAT_TTL_S = 10
HEARTBEAT_EVERY_S = 2.0


def write_heartbeat(r: redis.Redis, started_at: str) -> None:
    """Say this process serves (expires unless refreshed within :data:`HEARTBEAT_TTL_S`)."""
    info = {"pid": os.getpid(), "host": socket.gethostname(), "started_at": started_at}
    r.set(redis_keys.SERVICE_HEARTBEAT, json.dumps(info), ex=HEARTBEAT_TTL_S)


def clear_heartbeat(r: redis.Redis) -> None:
    """Remove the heartbeat if it is this process's."""
    raw = r.get(redis_keys.SERVICE_HEARTBEAT)
    try:
        info = json.loads(str(raw)) if raw else None
    except json.JSONDecodeError:
        info = None
    if isinstance(info, dict) and info.get("pid") == os.getpid():
        r.delete(redis_keys.SERVICE_HEARTBEAT)


def pid_alive(pid: int) -> bool:
    """True when a process with ``pid`` exists on this host and is not a zombie."""
    return process_alive(pid)


def ensure_single(r: redis.Redis) -> None:
    """Refuse to start beside a live service on this host.

    A heartbeat left by a killed service (its pid is gone) does not block a restart.

    Raises:
        NikaError: a service with a live pid refreshes the heartbeat.
    """
    raw = r.get(redis_keys.SERVICE_HEARTBEAT)
    if not raw:
        return
    try:
        info = json.loads(str(raw))
    except json.JSONDecodeError:
        return
    if not isinstance(info, dict):
        return
    pid = int(info.get("pid", 0))
    same_host = info.get("host") == socket.gethostname()
    if pid and pid != os.getpid() and (not same_host or pid_alive(pid)):
        raise NikaError(
            f"a memory service is already running (pid {pid} on {info.get('host')})",
            "use it, or stop it first with `nika down`",
        )


def clear_stale_pause(r: redis.Redis) -> bool:
    """Remove the writes-paused mark of a reset whose process died on this host (``kill -9``).

    Returns:
        True when a stale mark was removed.
    """
    raw = r.get(redis_keys.WRITES_PAUSED)
    try:
        info = json.loads(str(raw)) if raw else None
    except json.JSONDecodeError:
        info = None
    if not isinstance(info, dict) or info.get("host") != socket.gethostname():
        return False
    if pid_alive(int(info.get("pid", 0))):
        return False
    r.delete(redis_keys.WRITES_PAUSED)
    return True
