"""One RPC to the memory service over Redis (see :mod:`nika_tui.services.memory_client`): the
request sent (:func:`start_rpc`), its reply waited for (:class:`PendingReply`), the service's
error rebuilt as ours, and the heartbeat's value read. Sending and waiting are apart so that a
caller may have several requests in flight at once (a hook that needs two answers waits for
the slower one, not for their sum).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import redis

from nika_tui import errors
from nika_tui.errors import NikaError, ServiceBusy, ServiceNotRunning
from nika_tui.services import redis_keys
from nika_tui.services.liveness import heartbeat_live

POLL_S = 1.0
"""Longest single BLPOP: below the connection's socket timeout, and lets us notice a dead
service between polls instead of waiting out the whole timeout."""


def error_from_reply(reply: Mapping[str, Any]) -> NikaError:
    """Rebuild the service's error as the same :class:`NikaError` subclass.

    Every subclass lives in :mod:`nika_tui.errors`, so the name in ``kind`` finds it, whatever
    its constructor takes: the instance is made with ``message`` and ``hint`` and its plain
    extra ``fields`` set back, and so keeps the class's ``exit_code``.
    """
    kind = str(reply.get("kind", "NikaError"))
    cls = getattr(errors, kind, NikaError)
    if not (isinstance(cls, type) and issubclass(cls, NikaError)):
        cls = NikaError
    error = cls.__new__(cls)
    NikaError.__init__(
        error, str(reply.get("error", "the memory service failed")), str(reply.get("hint", ""))
    )
    fields = reply.get("fields")
    for name, value in (fields if isinstance(fields, dict) else {}).items():
        if name not in ("message", "hint"):
            setattr(error, str(name), value)
    return error


def parse_heartbeat(raw: Any) -> dict[str, Any] | None:
    """The heartbeat key's value as ``{pid, host, started_at}`` (None when absent)."""
    if not raw:
        return None
    try:
        info = json.loads(str(raw))
    except json.JSONDecodeError:
        return {"pid": str(raw)}
    return info if isinstance(info, dict) else {"pid": info}


def _alive(client: redis.Redis) -> bool:
    try:
        raw = client.get(redis_keys.SERVICE_HEARTBEAT)
    except (redis.RedisError, OSError) as exc:
        raise ServiceNotRunning() from exc
    return heartbeat_live(parse_heartbeat(raw))


@dataclass(frozen=True)
class PendingReply:
    """A request the service has been sent; :meth:`result` waits for its reply."""

    client: redis.Redis
    op: str
    request_id: str
    wait: float
    deadline: float
    """``time.monotonic()`` by which the reply must have come."""

    def result(self) -> dict[str, Any]:
        """The operation's result, by the request's deadline.

        Raises:
            ServiceNotRunning: no service, or it did not answer in time (``ServiceBusy`` when
                it is alive but late).
            NikaError: the operation failed (same subclass as in the service).
        """
        reply_key = redis_keys.rpc_reply(self.request_id)
        while True:
            left = self.deadline - time.monotonic()
            if left <= 0:
                # Alive but late: busy (a retry may succeed), not gone; either way the caller
                # gets an answer by its deadline and never hangs.
                error = ServiceBusy if _alive(self.client) else ServiceNotRunning
                raise error(
                    f"memory service did not answer {str(self.op)!r} within {self.wait:.3g}s: "
                    "busy, retry",
                    "retry; if it lasts, look at it with "
                    "`tmux -L $NIKA_TMUX_SOCKET attach -t nika-core`, or restart it "
                    "(`nika down` then `nika up`)",
                )
            try:
                popped = self.client.blpop([reply_key], timeout=min(POLL_S, max(left, 0.01)))
            except (redis.RedisError, OSError) as exc:
                raise ServiceNotRunning() from exc
            if popped is not None:
                reply: dict[str, Any] = json.loads(popped[1])
                if not reply.get("ok"):
                    raise error_from_reply(reply)
                result: dict[str, Any] = reply.get("result") or {}
                return result
            if not _alive(self.client):
                raise ServiceNotRunning()


def start_rpc(client: redis.Redis, op: str, body: Mapping[str, Any], wait: float) -> PendingReply:
    """Send one request (the heartbeat read in the same round trip) and return at once.

    Raises:
        ServiceNotRunning: Redis failed, or no live service (the request, unanswered, expires
            by its deadline).
    """
    request_id = uuid.uuid4().hex
    try:
        # The heartbeat and the request in one round trip (a recall makes three in all).
        # Without a live service the request stays unanswered in the stream: its deadline
        # tells a service started later to drop it, and the stream is capped.
        pipe = client.pipeline(transaction=False)
        pipe.get(redis_keys.SERVICE_HEARTBEAT)
        pipe.xadd(
            redis_keys.RPC_STREAM,
            {
                "id": request_id,
                "op": op,
                "body": json.dumps(dict(body), default=str),
                "deadline": f"{time.time() + wait:.3f}",
            },
            maxlen=10_000,
            approximate=True,
        )
        raw_beat, _ = pipe.execute()
    except (redis.RedisError, OSError) as exc:
        raise ServiceNotRunning() from exc
    if not heartbeat_live(parse_heartbeat(raw_beat)):
        raise ServiceNotRunning()
    return PendingReply(client, op, request_id, wait, time.monotonic() + wait)
