"""Tenant leases in Redis: each tenant has exactly one writer among the memory-service workers.

A lease is ``nika:lease:{tenant}`` = ``"{worker}|{epoch}"`` with a TTL (``SET NX PX``); the
epoch comes from ``INCR nika:lease:epoch:{tenant}`` so every grant has a fresh token. A worker
renews its leases from its loop; renewal and release compare the token first (one Lua script
each), so a worker whose lease expired cannot renew it back over a new holder. The fence is the
acknowledgement itself: :func:`fenced_ack` acknowledges ingest entries (``XACK`` + ``XDEL``) and
hands their outcomes to the writers only while the caller's token is still the lease's value,
atomically. A worker that lost a tenant can therefore never acknowledge for it again; whatever it
stored in the meantime stays unacknowledged and is replayed (idempotently) by the new holder.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import redis

from nika_tui.services.redis_keys import PREFIX

LEASE_TENANTS = f"{PREFIX}:lease:tenants"
"""Set of every tenant ever leased: where a worker looks for leases that expired."""

_ACQUIRE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return '' end
local epoch = redis.call('INCR', KEYS[2])
local token = ARGV[1] .. '|' .. epoch
redis.call('SET', KEYS[1], token, 'PX', ARGV[2])
redis.call('SADD', KEYS[3], ARGV[3])
return token
"""
_RECLAIM = """
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, string.len(ARGV[1]) + 1) ~= ARGV[1] .. '|' then return '' end
local token = ARGV[1] .. '|' .. redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], token, 'PX', ARGV[2])
return token
"""
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
_FENCED_ACK = """
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return 0 end
local n = tonumber(ARGV[3])
local ids = {}
for i = 1, n do ids[i] = ARGV[3 + i] end
redis.call('XACK', KEYS[1], ARGV[1], unpack(ids))
redis.call('XDEL', KEYS[1], unpack(ids))
local ttl = ARGV[4 + n]
local i = 5 + n
while i < #ARGV do
  redis.call('RPUSH', ARGV[i], ARGV[i + 1])
  redis.call('EXPIRE', ARGV[i], ttl)
  i = i + 2
end
return 1
"""


def lease_key(tenant_id: str) -> str:
    """The lease of one tenant (``worker|epoch``, with a TTL)."""
    return f"{PREFIX}:lease:{tenant_id}"


def epoch_key(tenant_id: str) -> str:
    """The tenant's grant counter: every lease gets a token never used before."""
    return f"{PREFIX}:lease:epoch:{tenant_id}"


def holder_of(token: str | None) -> str | None:
    """The worker named by a lease value (``None`` for a free lease)."""
    return token.rsplit("|", 1)[0] if token else None


@dataclass
class Lease:
    """A lease this worker holds: its token and when it lapses by this host's clock."""

    tenant_id: str
    token: str
    valid_until: float
    """``time.monotonic()`` before which the lease is certainly still ours (renewal start + TTL
    minus a margin for the round trip and clock drift between hosts)."""


class Leases:
    """The lease operations of one worker (``worker_id``) on one Redis."""

    def __init__(self, r: redis.Redis, worker_id: str, ttl_s: float) -> None:
        if "|" in worker_id:
            raise ValueError("a worker id cannot contain '|'")
        self.r = r
        self.worker_id = worker_id
        self.ttl_ms = max(100, int(ttl_s * 1000))
        self._acquire = r.register_script(_ACQUIRE)
        self._renew = r.register_script(_RENEW)
        self._reclaim = r.register_script(_RECLAIM)
        self._release = r.register_script(_RELEASE)
        self._ack = r.register_script(_FENCED_ACK)

    def _valid_until(self, started: float) -> float:
        # A quarter of the TTL as margin: expiry in Redis can never come before this instant.
        return started + self.ttl_ms / 1000 * 0.75

    def acquire(self, tenant_id: str) -> Lease | None:
        """Take the tenant's lease if it is free (``None`` if another worker holds it)."""
        started = time.monotonic()
        token = self._acquire(
            keys=[lease_key(tenant_id), epoch_key(tenant_id), LEASE_TENANTS],
            args=[self.worker_id, self.ttl_ms, tenant_id],
        )
        token = str(token) if token else ""
        return Lease(tenant_id, token, self._valid_until(started)) if token else None

    def reclaim(self, tenant_id: str) -> Lease | None:
        """Take back a lease still held under this worker's id by a previous, dead process of
        the same worker (the caller checked that no live process runs this id)."""
        started = time.monotonic()
        token = self._reclaim(
            keys=[lease_key(tenant_id), epoch_key(tenant_id)], args=[self.worker_id, self.ttl_ms]
        )
        token = str(token) if token else ""
        return Lease(tenant_id, token, self._valid_until(started)) if token else None

    def renew(self, lease: Lease) -> bool:
        """Extend the lease; False when it expired and was lost (it is not taken back)."""
        started = time.monotonic()
        ok = bool(self._renew(keys=[lease_key(lease.tenant_id)], args=[lease.token, self.ttl_ms]))
        if ok:
            lease.valid_until = self._valid_until(started)
        return ok

    def release(self, lease: Lease) -> None:
        """Give the lease up now (no-op if it is no longer ours)."""
        self._release(keys=[lease_key(lease.tenant_id)], args=[lease.token])

    def holders(self, tenant_ids: Sequence[str]) -> dict[str, str | None]:
        """The current holder of each tenant (``None``: free)."""
        pipe = self.r.pipeline(transaction=False)
        for tenant_id in tenant_ids:
            pipe.get(lease_key(tenant_id))
        values = pipe.execute()
        return {
            t: holder_of(str(v) if v else None) for t, v in zip(tenant_ids, values, strict=True)
        }

    def forget(self, tenant_id: str) -> None:
        """Take a deleted tenant off the lease table (its epoch stays: a tenant made again
        still gets tokens never used before)."""
        self.r.srem(LEASE_TENANTS, tenant_id)

    def known_tenants(self) -> list[str]:
        """Every tenant that was ever leased."""
        return sorted(str(t) for t in self.r.smembers(LEASE_TENANTS))

    def fenced_ack(
        self,
        lease: Lease,
        stream: str,
        group: str,
        ids: Sequence[str],
        done: Sequence[tuple[str, str]],
        done_ttl_s: int,
    ) -> bool:
        """Acknowledge and delete ``ids`` and push ``done`` outcomes, only if still the holder.

        Returns:
            False (nothing done) when the lease's value is no longer ``lease.token``.
        """
        if not ids:
            return True
        args: list[str | int] = [group, lease.token, len(ids), *ids, done_ttl_s]
        for key, payload in done:
            args += [key, payload]
        return bool(self._ack(keys=[stream, lease_key(lease.tenant_id)], args=args))
