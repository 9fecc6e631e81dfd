"""The scale leader: the one worker, among those joined to one Redis, that samples and plans.

Every worker runs a :class:`~nika_tui.scale.scheduler.ScaleScheduler`; only the holder of
:data:`LEADER_KEY` acts. The lease is ``SET NX PX`` with a token per process (``{worker}|{uuid}``)
and is renewed by the same Lua script that takes it, so a leader whose lease lapsed (it paused,
it died) can never renew it back over a new one. A dead leader's lease expires after its TTL
(the tenant leases' ``NIKA_LEASE_TTL_S``) and the next worker to tick takes it over.

Leadership is liveness only: a plan is applied once because the plan state is in Redis and its
move to ``applying`` happens under the state lock (``scale/state.py``), whoever leads.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import redis

from nika_tui.services.redis_keys import PREFIX

LEADER_KEY = f"{PREFIX}:scale:leader"
"""``{worker}|{uuid}`` of the worker that runs strategy B, with a TTL."""

_HOLD = """
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if v then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""
_RESIGN = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class ScaleLeader:
    """Takes, renews and gives up the scale leadership of one worker process."""

    def __init__(
        self,
        r: redis.Redis,
        worker_id: str,
        ttl_s: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.r = r
        self.worker_id = worker_id
        self.token = f"{worker_id}|{uuid.uuid4().hex}"
        """A fresh token per process: a restarted worker does not inherit a lapsing lease."""
        self.ttl_ms = max(100, int(ttl_s * 1000))
        self._monotonic = monotonic
        self._valid_until = 0.0
        self._hold = r.register_script(_HOLD)

    def lead(self) -> bool:
        """True when this process leads (the lease is taken or renewed now if due)."""
        started = self._monotonic()
        # Renew at a quarter of the TTL: the loop ticks every second or after a batch.
        if started < self._valid_until - 0.75 * self.ttl_ms / 1000:
            return True
        if self._hold(keys=[LEADER_KEY], args=[self.token, self.ttl_ms]):
            self._valid_until = started + self.ttl_ms / 1000
            return True
        self._valid_until = 0.0
        return False

    def resign(self) -> None:
        """Give the leadership up (a stop): another worker leads at its next tick."""
        self.r.eval(_RESIGN, 1, LEADER_KEY, self.token)
        self._valid_until = 0.0


def leader_of(r: redis.Redis) -> str | None:
    """The worker id of the current scale leader (``None``: nobody leads now)."""
    raw = r.get(LEADER_KEY)
    return str(raw).rsplit("|", 1)[0] if raw else None
