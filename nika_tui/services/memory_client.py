"""The thin client every writer and reader uses to reach the memory service through Redis.

- Writes (``remember``) are XADDed to ``INGEST_STREAM``: durable once the call returns, even
  while the service is down (it consumes the backlog when it starts). A writer that wants to
  know the outcome BLPOPs ``ingest_done(tenant, key)``, where the service pushes it.
- Reads and person-made decisions are RPCs: XADD ``{id, op, body, deadline}`` to ``RPC_STREAM``,
  then BLPOP ``rpc_reply(id)`` with a timeout; a running service that cannot answer in time
  raises :class:`ServiceBusy` (retry) by the deadline. Replies are ``{"ok": true, "result": …}`` or
  ``{"ok": false, "error", "hint", "kind"}`` (``kind`` names the :class:`NikaError` subclass).
- ``SERVICE_HEARTBEAT`` (a key with a TTL) tells whether a service is running; without one the
  client fails fast with "memory service is not running — start it with `nika up`".

No engine import here: hooks and the dashboard load this module, never torch or qdrant.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import redis

from nika_tui import errors
from nika_tui.domain.input_limits import check_no_nul, check_valid_from
from nika_tui.domain.memory import MemoryRecord, content_hash
from nika_tui.domain.protocol import Op
from nika_tui.domain.requests import RecallQuery, RecallResult, RememberRequest
from nika_tui.errors import NikaError, ServiceBusy, ServiceNotRunning, StoreUnavailable
from nika_tui.services import redis_keys
from nika_tui.services.liveness import heartbeat_live
from nika_tui.services.secret_mask import masked_request

if TYPE_CHECKING:
    from nika_tui.domain.protocol_codec import R, Request
    from nika_tui.settings import Settings

RPC_REPLY_TTL_S = 60
"""Seconds an unread RPC reply is kept before Redis expires it."""

_POLL_S = 1.0
"""Longest single BLPOP: below the connection's socket timeout, and lets us notice a dead
service between polls instead of waiting out the whole timeout."""


def idempotency_key(req: RememberRequest) -> str:
    """The request's key: the writer's own, else the content hash (tenant, layer, project, text)."""
    return req.idempotency_key or content_hash(
        req.tenant_id, req.layer, req.text, req.meta.project_id
    )


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


class MemoryClient:
    """Requests to the memory service over one Redis connection."""

    def __init__(self, redis_client: redis.Redis, timeout: float = 5.0) -> None:
        """Args:
        redis_client: a client with ``decode_responses=True``.
        timeout: default seconds to wait for an RPC reply.
        """
        self.redis = redis_client
        self.timeout = timeout

    @classmethod
    def open(cls, settings: Settings | None = None, *, start_redis: bool = False) -> MemoryClient:
        """A client on ``REDIS_URL`` or the embedded Redis.

        Args:
            settings: The entry's settings (None: built from ``os.environ``, for a one-shot
                command).
            start_redis: start the embedded Redis if it is down (writers do, so that a write
                is queued durably even before the service runs); readers do not.

        Raises:
            ServiceNotRunning: Redis is not reachable and was not to be started.
            StoreUnavailable: Redis could not be started or reached.
        """
        from nika_tui.services.redis_server import connect

        try:
            return cls(connect(settings, start=start_redis))
        except StoreUnavailable as exc:
            if start_redis:
                raise
            raise ServiceNotRunning() from exc

    # --- liveness -----------------------------------------------------------------------
    def service_info(self) -> dict[str, Any] | None:
        """The running service's heartbeat (``pid``, ``host``, ``started_at``) or None.

        A heartbeat whose pid is dead or a zombie on this host counts as none
        (:mod:`nika_tui.services.liveness`): its key outlives a ``kill -9`` by up to its TTL.
        """
        info = self._heartbeat()
        return info if heartbeat_live(info) else None

    def _heartbeat(self) -> dict[str, Any] | None:
        try:
            raw = self.redis.get(redis_keys.SERVICE_HEARTBEAT)
        except (redis.RedisError, OSError) as exc:
            raise ServiceNotRunning() from exc
        return parse_heartbeat(raw)

    def service_alive(self) -> bool:
        """True while a service refreshes its heartbeat."""
        return self.service_info() is not None

    def reset_running(self) -> str | None:
        """The tenant whose reset holds its writes in the service now (decision 505), or None."""
        try:
            raw = self.redis.get(redis_keys.WRITES_PAUSED)
            mark = json.loads(raw) if isinstance(raw, str) else None
        except (redis.RedisError, OSError, ValueError):
            return None  # only a note depends on it
        return str(mark.get("tenant_id")) if isinstance(mark, dict) else None

    # --- writes -------------------------------------------------------------------------
    def remember(self, req: RememberRequest) -> str:
        """Queue one memory durably and return its idempotency key.

        Raises:
            StoreUnavailable: Redis refused the write (nothing was queued).
        """
        check_no_nul(req.text)
        if req.valid_from is not None:
            check_valid_from(req.valid_from, datetime.now(UTC))
        # Masked before the stream: Redis's AOF must never hold a credential either.
        req = masked_request(req)
        key = idempotency_key(req)
        req = req.model_copy(update={"idempotency_key": key})
        try:
            pipe = self.redis.pipeline(transaction=True)
            # A stale outcome of an earlier write with the same key must not answer this one.
            pipe.delete(redis_keys.ingest_done(req.tenant_id, key))
            # Never trimmed: an entry leaves the stream only once the service acknowledged it.
            pipe.xadd(redis_keys.INGEST_STREAM, {"req": req.model_dump_json()})
            pipe.execute()
        except (redis.RedisError, OSError) as exc:
            raise StoreUnavailable(
                f"could not queue the memory in Redis ({exc})", "start Redis with `nika up`"
            ) from exc
        return key

    def wait_ingested(self, tenant_id: str, key: str, timeout: float = 30.0) -> dict[str, Any]:
        """Block until the service reports the outcome of the request with ``key``.

        Returns:
            The outcome (``id``, ``status``, ``retired``, ``reviews``, …).

        Raises:
            ServiceNotRunning: no service is running (the memory stays queued).
            StoreUnavailable: no outcome within ``timeout`` (it stays queued).
            NikaError: the service refused the request (e.g. unknown tenant).
        """
        list_key = redis_keys.ingest_done(tenant_id, key)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise StoreUnavailable(
                    f"the memory was queued but not ingested within {timeout:.0f}s",
                    "it stays queued and will be ingested; check the service with `nika up`",
                )
            try:
                popped = self.redis.blpop([list_key], timeout=min(_POLL_S, max(left, 0.01)))
            except (redis.RedisError, OSError) as exc:
                raise StoreUnavailable(
                    f"Redis failed while waiting ({exc})", "run `nika up`"
                ) from exc
            if popped is not None:
                outcome: dict[str, Any] = json.loads(popped[1])
                if "error" in outcome:
                    raise error_from_reply(outcome)
                return outcome
            if not self.service_alive():
                raise ServiceNotRunning(
                    hint="start it with `nika up` (the memory is queued and will be ingested then)"
                )
            self._raise_if_parked(tenant_id)

    def _raise_if_parked(self, tenant_id: str) -> None:
        """Say at once that the tenant's store is failing (its memory stays queued)."""
        try:
            raw = self.redis.hget(redis_keys.TENANT_ALARMS, tenant_id)
        except (redis.RedisError, OSError):
            return
        if raw:
            alarm = json.loads(str(raw))
            raise StoreUnavailable(
                f"the memory is queued, but tenant {tenant_id}'s store is failing: "
                f"{alarm.get('reason', '?')}",
                str(alarm.get("hint") or "see `nika doctor`"),
            )

    # --- RPC ----------------------------------------------------------------------------
    def call(
        self, op: str, body: Mapping[str, Any], timeout: float | None = None
    ) -> dict[str, Any]:
        """Run operation ``op`` in the service and return its result.

        Raises:
            ServiceNotRunning: no service, or it did not answer within ``timeout``.
            NikaError: the operation failed (same subclass as in the service).
        """
        wait = self.timeout if timeout is None else timeout
        request_id = uuid.uuid4().hex
        try:
            # The heartbeat and the request in one round trip (a recall makes three in all).
            # Without a live service the request stays unanswered in the stream: its deadline
            # tells a service started later to drop it, and the stream is capped.
            pipe = self.redis.pipeline(transaction=False)
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
        reply_key = redis_keys.rpc_reply(request_id)
        deadline = time.monotonic() + wait
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                # Alive but late: busy (a retry may succeed), not gone; either way the caller
                # gets an answer by its deadline and never hangs.
                error = ServiceBusy if self.service_alive() else ServiceNotRunning
                raise error(
                    f"memory service did not answer {str(op)!r} within {wait:.3g}s: busy, retry",
                    "retry; if it lasts, look at it with "
                    "`tmux -L $NIKA_TMUX_SOCKET attach -t nika-core`, or restart it "
                    "(`nika down` then `nika up`)",
                )
            try:
                popped = self.redis.blpop([reply_key], timeout=min(_POLL_S, max(left, 0.01)))
            except (redis.RedisError, OSError) as exc:
                raise ServiceNotRunning() from exc
            if popped is not None:
                reply: dict[str, Any] = json.loads(popped[1])
                if not reply.get("ok"):
                    raise error_from_reply(reply)
                result: dict[str, Any] = reply.get("result") or {}
                return result
            if not self.service_alive():
                raise ServiceNotRunning()

    def send(self, request: Request[R], timeout: float | None = None) -> R:
        """Run ``request`` in the service and return its reply model.

        Raises:
            ServiceNotRunning: no service, or it did not answer within ``timeout``.
            NikaError: the operation failed (same subclass as in the service).
        """
        return request.reply(self.call(request.OP, request.to_body(), timeout))

    def recall(self, q: RecallQuery) -> RecallResult:
        """Hits for ``q``, or the PALACE answer.

        The query and result are the pydantic models the recall request and reply wrap
        (:class:`~nika_tui.domain.protocol_requests.RecallRequest`): used directly, so a hook
        that recalls does not build the ~60 protocol dataclasses (tens of ms) at its start.
        """
        return RecallResult.model_validate(self.call(Op.RECALL, q.model_dump(mode="json")))

    def history(self, tenant_id: str, memory_id: str) -> list[MemoryRecord]:
        """The supersede chain around ``memory_id``, oldest first."""
        return self.history_and_snapshots(tenant_id, memory_id)[0]

    def history_and_snapshots(
        self, tenant_id: str, memory_id: str
    ) -> tuple[list[MemoryRecord], list[str]]:
        """The chain, and the snapshots holding its older versions (after a fresh start)."""
        from nika_tui.domain import protocol_requests as req

        out = self.send(req.HistoryRequest(tenant_id, memory_id))
        return [MemoryRecord.model_validate(r) for r in out.records], list(out.snapshots)

    def review_list(self, tenant_id: str, include_resolved: bool = False) -> list[dict[str, Any]]:
        """Pending review items (or all) of a tenant."""
        from nika_tui.domain import protocol_requests as req

        return self.send(req.ReviewListRequest(tenant_id, include_resolved)).items

    def review_resolve(
        self, tenant_id: str, item_id: str, decision: str, note: str = ""
    ) -> dict[str, Any]:
        """Approve (retire the old memory) or reject (keep both) one review item."""
        from nika_tui.domain import protocol_requests as req

        return self.send(req.ReviewResolveRequest(tenant_id, item_id, decision, note)).item

    # --- time and agent tools (issue 21) ------------------------------------------------
    def timeline(self, q: RecallQuery) -> dict[str, Any]:
        """How the facts ``q`` names changed: ``timelines`` (versions) or ``palace``."""
        from nika_tui.domain import protocol_requests as req

        return self.send(req.TimelineRequest(q)).to_body()

    def projects(self, tenant_id: str) -> dict[str, Any]:
        """``{project: {layer: {current, retired}}}`` of a tenant."""
        from nika_tui.domain import protocol_requests as req

        return self.send(req.ProjectsRequest(tenant_id)).projects

    def recent(
        self,
        tenant_id: str,
        project_id: str = "",
        limit: int = 10,
        timeout: float | None = None,
    ) -> list[MemoryRecord]:
        """The newest current facts (semantic, by valid time) of a tenant or one project.

        ``timeout`` overrides the client's (a hook shares one budget between two asks).
        """
        from nika_tui.domain import protocol_requests as req

        out = self.send(req.RecentRequest(tenant_id, project_id, limit), timeout)
        return [MemoryRecord.model_validate(r) for r in out.records]

    def agent_retire(
        self,
        tenant_id: str,
        memory_id: str,
        reason: str,
        superseded_by: str = "",
        agent: str = "agent",
    ) -> dict[str, Any]:
        """Retire one memory for an agent (or queue it for review, per the tenant's settings)."""
        from nika_tui.domain import protocol_requests as req

        request = req.AgentRetireRequest(tenant_id, memory_id, reason, superseded_by, agent)
        return self.send(request).to_body()

    def agent_review_resolve(
        self, tenant_id: str, item_id: str, decision: str, note: str = "", agent: str = "agent"
    ) -> dict[str, Any]:
        """Resolve a review item for an agent (refused unless the tenant allows it)."""
        from nika_tui.domain import protocol_requests as req

        request = req.AgentReviewResolveRequest(tenant_id, item_id, decision, note, agent)
        return self.send(request).item
