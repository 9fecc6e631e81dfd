"""Active refs: which sessions hold a memory they were given by a recall (the purge spares it).

``ACTIVE_REFS`` is one Redis hash, field ``{tenant}:{memory id}``, value a JSON object
``{session: expiry}``. Adding a holder is a read-modify-write (prune expired holders, add this
session); done in Python it took two round trips and two readers recalling the same memory at
once could each drop the other's session (decision 283). A Lua script does it inside Redis:
atomic, and one command that a caller's pipeline carries with its other writes (decision 579).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nika_tui.services import redis_keys

HOLD_SCRIPT = """
local now = tonumber(ARGV[2])
local expiry = tonumber(ARGV[3])
for i = 4, #ARGV do
  local holders = {}
  local raw = redis.call('HGET', KEYS[1], ARGV[i])
  if raw then
    local ok, decoded = pcall(cjson.decode, raw)
    if ok and type(decoded) == 'table' then
      for session, until_s in pairs(decoded) do
        if type(until_s) == 'number' and until_s > now then holders[session] = until_s end
      end
    end
  end
  holders[ARGV[1]] = expiry
  redis.call('HSET', KEYS[1], ARGV[i], cjson.encode(holders))
end
return #ARGV - 3
"""
"""KEYS[1] the hash; ARGV: session, now, expiry, then the fields. An unreadable value is
replaced (as the Python version did when it raised: it never wrote it back)."""


def hold_refs(r: Any, fields: Sequence[str], session_id: str, now_s: float, ttl_s: float) -> None:
    """Queue (on a pipeline) or run (on a client) the holding of ``fields`` by ``session_id``
    until ``now_s + ttl_s``; holders already expired at ``now_s`` are pruned."""
    if not fields:
        return
    # EVAL, not EVALSHA through a registered Script: redis-py checks a pipeline's scripts with
    # an extra SCRIPT EXISTS round trip on every execute; Redis caches the compiled body anyway.
    r.eval(
        HOLD_SCRIPT,
        1,
        redis_keys.ACTIVE_REFS,
        session_id,
        repr(float(now_s)),
        repr(float(now_s + ttl_s)),
        *fields,
    )
