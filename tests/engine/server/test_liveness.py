"""The writes-paused mark of a reset whose process died is cleared when a service starts."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import redis

from nika_tui.engine.server.liveness import clear_stale_pause
from nika_tui.services import redis_keys


def _mark(r: redis.Redis, pid: int, host: str) -> None:
    body = {"op": "compress.reset", "tenant_id": "acme", "stage": "build", "pid": pid,
            "host": host, "since": "2026-12-04T10:00:00+00:00"}  # fmt: skip
    r.set(redis_keys.WRITES_PAUSED, json.dumps(body))


def test_a_dead_resets_mark_is_cleared_a_live_ones_is_kept(redis_client: redis.Redis) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # reaped: its pid names no process
    _mark(redis_client, dead.pid, socket.gethostname())
    assert clear_stale_pause(redis_client) is True
    assert redis_client.get(redis_keys.WRITES_PAUSED) is None

    _mark(redis_client, os.getpid(), socket.gethostname())  # a reset still running here
    assert clear_stale_pause(redis_client) is False
    _mark(redis_client, dead.pid, "another-host")  # not ours to judge: its TTL bounds it
    assert clear_stale_pause(redis_client) is False
    assert redis_client.get(redis_keys.WRITES_PAUSED) is not None
