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
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import redis

from nika_tui.domain.input_limits import check_no_nul, check_valid_from
from nika_tui.domain.memory import MemoryRecord, content_hash
from nika_tui.domain.protocol import Op
from nika_tui.domain.requests import RecallQuery, RecallResult, RememberRequest
from nika_tui.errors import ServiceNotRunning, StoreUnavailable, ValidationFailed
from nika_tui.services import redis_keys
from nika_tui.services.liveness import heartbeat_live
from nika_tui.services.rpc_call import (
    POLL_S,
    PendingReply,
    error_from_reply,
    parse_heartbeat,
    start_rpc,
)
from nika_tui.services.secret_mask import masked_request

if TYPE_CHECKING:
    from nika_tui.domain.protocol_codec import R, Request
    from nika_tui.settings import Settings

RPC_REPLY_TTL_S = 60
"""Seconds an unread RPC reply is kept before Redis expires it."""


def idempotency_key(req: RememberRequest) -> str:
    """The request's key: the writer's own, else the content hash (tenant, layer, project, text)."""
    return req.idempotency_key or content_hash(
        req.tenant_id, req.layer, req.text, req.meta.project_id
    )


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
    def open(cls, settings: Settings, *, start_redis: bool = False) -> MemoryClient:
        """A client on ``REDIS_URL`` or the embedded Redis.

        Args:
            settings: The entry's settings.
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
                popped = self.redis.blpop([list_key], timeout=min(POLL_S, max(left, 0.01)))
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
    def start(self, op: str, body: Mapping[str, Any], timeout: float | None = None) -> PendingReply:
        """Send operation ``op`` to the service and return at once: the reply is waited for by
        :meth:`PendingReply.result`, so one caller may have several requests in flight (the
        service's readers answer them side by side).

        Raises:
            ServiceNotRunning: no live service (nothing is waited for).
        """
        return start_rpc(self.redis, op, body, self.timeout if timeout is None else timeout)

    def call(
        self, op: str, body: Mapping[str, Any], timeout: float | None = None
    ) -> dict[str, Any]:
        """Run operation ``op`` in the service and return its result.

        Raises:
            ServiceNotRunning: no service, or it did not answer within ``timeout``.
            NikaError: the operation failed (same subclass as in the service).
        """
        return self.start(op, body, timeout).result()

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
        return recall_result(self.start_recall(q))

    def start_recall(self, q: RecallQuery, timeout: float | None = None) -> PendingReply:
        """:meth:`recall` sent, not waited for (:func:`recall_result` reads its reply)."""
        return self.start(Op.RECALL, q.model_dump(mode="json"), timeout)

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
        return recent_records(self.start_recent(tenant_id, project_id, limit, timeout))

    def start_recent(
        self, tenant_id: str, project_id: str = "", limit: int = 10, timeout: float | None = None
    ) -> PendingReply:
        """:meth:`recent` sent, not waited for (:func:`recent_records` reads its reply).

        The body is :class:`~nika_tui.domain.protocol_requests.RecentRequest`'s, written out
        as :meth:`recall` does, so a hook's digest does not import the protocol models (~50 ms
        in each hook run).
        """
        body = {"tenant_id": tenant_id, "project_id": project_id, "limit": limit}
        return self.start(Op.RECENT, body, timeout)

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


def recall_result(pending: PendingReply) -> RecallResult:
    """The reply of :meth:`MemoryClient.start_recall` (waits for it; raises as :meth:`call`)."""
    return RecallResult.model_validate(pending.result())


def recent_records(pending: PendingReply) -> list[MemoryRecord]:
    """The reply of :meth:`MemoryClient.start_recent` (waits for it; raises as :meth:`call`).

    Raises:
        ValidationFailed: the reply has no list of records (as ``RecentReply`` would say).
    """
    records = pending.result().get("records")
    if not isinstance(records, list):
        raise ValidationFailed(
            "bad recent reply: records must be a list",
            "upgrade the caller or the service (`nika down && nika up`)",
        )
    return [MemoryRecord.model_validate(r) for r in records]
