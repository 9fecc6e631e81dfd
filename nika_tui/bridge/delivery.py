"""Delivery: a durable inbox per tenant and one outbox, both Redis streams.

- :func:`accept` takes a gateway message once: one Lua script sets the message id's ``seen``
  key (NX, a week) and appends to the tenant's inbox, so a gateway's retry of the same id is
  answered once and a crash between the two steps cannot lose or double a message.
- The inbox is consumed by :class:`~nika_tui.bridge.kernel_delivery.TenantWorker` (one per
  tenant, in order), which acknowledges an entry only once the agent's answer is in the
  outbox: a kernel that is down leaves the message pending, retried until it is back.
- :class:`Outbox` sends replies through the gateway that brought the message, acknowledging
  only after the gateway took it; a failure is retried with capped doubling delays, and a
  later reply to the same conversation never overtakes an earlier one. A reply the gateway
  refuses for good (4xx other than 408/429) moves to the dead stream with the reason: kept.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import httpx
import redis

from nika_tui.bridge.records import record_error, record_message
from nika_tui.domain.bridge import Gateway, InboundMessage, retry_delay
from nika_tui.paths import Roots
from nika_tui.services import bridge_keys as keys

log = logging.getLogger("nika.bridge")
MAX_STREAM = 100_000
"""Approximate length the outbox and dead streams are trimmed to."""

_ACCEPT = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then
  return redis.call('XADD', KEYS[2], '*', 'msg', ARGV[3])
end
return false
"""
_MARK_SEEN = "return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) and 1 or 0"


class DeliveryFailed(Exception):
    """A gateway did not take a reply; ``retry`` says whether trying again can help."""

    def __init__(self, reason: str, retry: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry = retry


class Sender(Protocol):
    """A gateway adapter's outbound half."""

    def send(self, http: httpx.Client, message: InboundMessage, text: str) -> None:
        """Send ``text`` as the answer to ``message`` (raises :class:`DeliveryFailed`)."""


def ensure_group(client: redis.Redis, stream: str) -> None:
    """Create the consumer group (and the stream) if missing."""
    try:
        client.xgroup_create(stream, keys.GROUP, id="0", mkstream=True)
    except redis.ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise


def accept(client: redis.Redis, message: InboundMessage, tenant_id: str) -> str | None:
    """Queue a message for its tenant's kernel once; its inbox entry id, None when a replay."""
    result = client.eval(
        _ACCEPT,
        2,
        keys.seen(message.gateway.value, message.message_id),
        keys.inbox(tenant_id),
        tenant_id,
        str(keys.SEEN_TTL_S),
        json.dumps(message.to_fields()),
    )
    return str(result) if result else None


def mark_seen(client: redis.Redis, message: InboundMessage, outcome: str) -> bool:
    """Remember a message id that is answered without a kernel; False when a replay."""
    key = keys.seen(message.gateway.value, message.message_id)
    return bool(client.eval(_MARK_SEEN, 1, key, outcome, str(keys.SEEN_TTL_S)))


def enqueue_reply(
    client: redis.Redis, tenant_id: str | None, kind: str, message: InboundMessage, text: str
) -> str:
    """Put an answer in the outbox (durable once this returns); its entry id."""
    body = {"tenant_id": tenant_id or "", "kind": kind, "message": message.to_fields(),
            "text": text}  # fmt: skip
    entry = client.xadd(keys.OUTBOX, {"out": json.dumps(body)}, maxlen=MAX_STREAM, approximate=True)
    return str(entry)


@dataclass
class _Attempt:
    attempts: int = 0
    next_at: float = 0.0
    error: str = ""


class Outbox:
    """Sends the outbox's replies; run :meth:`run` in a thread, stop with :attr:`stop`."""

    def __init__(
        self,
        client: redis.Redis,
        senders: Mapping[Gateway, Sender],
        where: Roots,
        *,
        http: httpx.Client | None = None,
        sync_waiters: Callable[[InboundMessage, str], bool] | None = None,
        max_attempts: int = 12,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.client = client
        self.senders = dict(senders)
        self.roots = where
        """Where the tenants' buses are (the roots of the bridge's settings)."""
        self.http = http or httpx.Client(timeout=15.0)
        self.sync_waiters = sync_waiters
        self.max_attempts = max_attempts
        self.clock = clock or (lambda: datetime.now(UTC))
        self.stop = threading.Event()
        self.wake = threading.Event()

    def _attempt(self, entry_id: str) -> _Attempt:
        raw = self.client.hget(keys.ATTEMPTS, entry_id)
        if not raw:
            return _Attempt()
        data = json.loads(str(raw))
        return _Attempt(int(data["attempts"]), float(data["next_at"]), str(data["error"]))

    def run(self) -> None:
        """Loop until :attr:`stop` is set: new entries, then due retries, in stream order.

        A Redis outage or a bug is logged and waited out: the thread never dies, the entries
        stay pending and are sent once it passes.
        """
        while not self.stop.is_set():
            try:
                ensure_group(self.client, keys.OUTBOX)
                self.client.xreadgroup(keys.GROUP, "bridge", {keys.OUTBOX: ">"}, count=100)
                delay = self.drain()
            except (redis.RedisError, OSError) as exc:
                log.warning("outbox: Redis unavailable (%s); retrying", exc)
                delay = 2.0
            except Exception:
                log.exception("outbox: sending failed; retrying")
                delay = 5.0
            self.wake.wait(timeout=min(delay, 0.5) if delay < 2.0 else delay)
            self.wake.clear()

    def drain(self) -> float:
        """Try every pending entry that is due; seconds until the next one is."""
        pending = self.client.xpending_range(keys.OUTBOX, keys.GROUP, "-", "+", 1000)
        ids = [str(p["message_id"]) for p in pending]
        blocked: set[tuple[str, str]] = set()
        next_due = 1.0
        for entry_id in ids:
            rows: Any = self.client.xrange(keys.OUTBOX, entry_id, entry_id)
            if not rows:
                self.client.xack(keys.OUTBOX, keys.GROUP, entry_id)
                continue
            body = json.loads(str(rows[0][1]["out"]))
            message = InboundMessage.from_fields(body["message"])
            conversation = (message.gateway.value, message.conversation)
            if conversation in blocked:
                continue
            state = self._attempt(entry_id)
            wait = state.next_at - time.time()
            if wait > 0:
                blocked.add(conversation)
                next_due = min(next_due, wait)
                continue
            if not self._send_one(entry_id, body, message, state):
                blocked.add(conversation)
        return max(0.05, next_due)

    def _send_one(
        self, entry_id: str, body: dict[str, Any], message: InboundMessage, state: _Attempt
    ) -> bool:
        tenant = str(body.get("tenant_id") or "") or None
        text = str(body["text"])
        now = self.clock()
        try:
            if not (self.sync_waiters and self.sync_waiters(message, text)):
                sender = self.senders.get(message.gateway)
                if sender is None:
                    raise DeliveryFailed(f"{message.gateway.value} is not configured", retry=True)
                sender.send(self.http, message, text)
        except DeliveryFailed as exc:
            state.attempts += 1
            state.error = exc.reason
            record_error(self.client, self.roots, tenant, message.gateway.value,
                         f"reply not delivered (attempt {state.attempts}): {exc.reason}", now,
                         message_id=message.message_id)  # fmt: skip
            if exc.retry and state.attempts < self.max_attempts:
                state.next_at = time.time() + retry_delay(state.attempts)
                self.client.hset(keys.ATTEMPTS, entry_id, json.dumps(state.__dict__))
                return False
            dead = {**body, "error": exc.reason, "attempts": state.attempts}
            self.client.xadd(keys.DEAD, {"out": json.dumps(dead)}, maxlen=MAX_STREAM)
            self._done(entry_id)
            return True
        if tenant:
            record_message(self.client, self.roots, tenant, "out", message, text,
                           str(body["kind"]), now)  # fmt: skip
        self._done(entry_id)
        return True

    def _done(self, entry_id: str) -> None:
        pipe = self.client.pipeline()
        pipe.xack(keys.OUTBOX, keys.GROUP, entry_id)
        pipe.xdel(keys.OUTBOX, entry_id)
        pipe.hdel(keys.ATTEMPTS, entry_id)
        pipe.execute()


def retry_dead(client: redis.Redis) -> int:
    """Move every kept (undeliverable) reply back to the outbox; how many were moved.

    For after the cause is fixed (a credential, a gateway's outage): the running bridge sends
    them within a second. Unreadable inbox entries stay where they are.
    """
    moved = 0
    rows: Any = client.xrange(keys.DEAD)
    for entry_id, fields in rows:
        if "out" not in fields:
            continue
        body = json.loads(str(fields["out"]))
        body.pop("error", None)
        body.pop("attempts", None)
        pipe = client.pipeline()
        pipe.xadd(keys.OUTBOX, {"out": json.dumps(body)}, maxlen=MAX_STREAM, approximate=True)
        pipe.xdel(keys.DEAD, entry_id)
        pipe.execute()
        moved += 1
    return moved
