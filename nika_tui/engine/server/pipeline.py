"""The ingest pipeline of the memory service: read-ahead, group commit, the debt pause.

An ingest entry is acknowledged (``XACK`` + ``XDEL``) only after :func:`ingest_batch` returned
and the store was flushed. With embed-ahead on, batch k+1 is read (not acknowledged) and
embedded on one worker thread while batch k is stored; under such a backlog two batches share
one flush and one acknowledgement (:data:`GROUP_COMMIT_BATCHES`). A tenant whose store fails is
parked (its entries pending); a paused tenant's bulk writes wait (``ingest_paused``).

:class:`IngestPipeline` is that state machine; the loop (``server/loop.py``, which tells the
whole story) reads the streams and feeds it.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import redis

from nika_tui.domain.debt import ingest_allowed
from nika_tui.domain.requests import RememberRequest
from nika_tui.engine.context import EngineContext
from nika_tui.engine.embed_ahead import EmbedAhead, PendingVectors
from nika_tui.engine.ingest import ingest_batch, parse_request
from nika_tui.engine.server.rpc import error_body
from nika_tui.engine.tenant_configs import TenantConfigSync
from nika_tui.engine.tenant_faults import TenantFaults
from nika_tui.engine.worker import Worker
from nika_tui.errors import NikaError, StoreUnavailable, ValidationFailed
from nika_tui.services import redis_keys
from nika_tui.services.secret_mask import masked_request

if TYPE_CHECKING:
    from nika_tui.automemory.runner import AutoMemoryScheduler
    from nika_tui.engine.server.resets import TenantResets

log = logging.getLogger("nika.service")

BATCH = 128
"""Entries read per XREADGROUP (one embedder call embeds an ingest batch)."""
INGEST_DONE_TTL_S = 600
"""Seconds an ingest outcome waits for its writer in ``ingest_done`` before expiring."""
GROUP_COMMIT_BATCHES = 2
"""Batches flushed and acknowledged together while a backlog lasts.

A flush costs about the same for 16 points as for 256 (~26 ms wall, fsyncs of every segment
and index file, measured), and with the acks it was a third of the store side of an ingest.
Under a backlog the first batch's acks wait for the second batch (~0.7 s at 128 facts); alone,
a batch is acknowledged as soon as it is flushed.
"""

if redis_keys.INGEST_GROUP != redis_keys.RPC_GROUP:  # pragma: no cover - a contract check
    raise RuntimeError("the service reads both streams with one XREADGROUP: same group name")
GROUP = redis_keys.INGEST_GROUP

_Parsed = tuple[str, dict[str, str], RememberRequest]
"""An ingest entry: stream id, raw fields, parsed request."""


@dataclass
class _AheadBatch:
    """Ingest entries read ahead (parsed, admitted, unacknowledged) and their embedding."""

    parsed: list[_Parsed]
    vectors: PendingVectors


def _texts(parsed: list[_Parsed]) -> list[str]:
    return [req.text for _, _, req in parsed]


class IngestPipeline:
    """Admit, embed (ahead), store, flush and acknowledge ingest entries.

    The loop (``MemoryService``) sets the attributes below and provides the two methods.
    """

    ctx: EngineContext
    r: redis.Redis
    worker: Worker | None
    consumer: str
    faults: TenantFaults
    resets: TenantResets
    automemory: AutoMemoryScheduler
    configs: TenantConfigSync
    processed: int
    last_ingest: float
    _first_drain: bool
    """When (monotonic) the loop last stored an ingest batch; ``inf`` while it stores one."""
    _embed_ahead: EmbedAhead | None
    _ahead: _AheadBatch | None
    _uncommitted: list[tuple[str, RememberRequest, Mapping[str, Any]]]
    _uncommitted_batches: int
    _retry_pending: bool
    _has_deferred: bool
    _stop: threading.Event

    def beat(self, force: bool = False) -> None:  # pragma: no cover - the loop's
        raise NotImplementedError

    if TYPE_CHECKING:  # the loop's RPC side (rpc_loop.py) and ResetHold's; for the type checker

        def _serve_waiting_rpc(self) -> None: ...

        def _without_held(
            self, parsed: list[_Parsed], vectors: list[list[float]] | None
        ) -> tuple[list[_Parsed], list[list[float]] | None]: ...

    def _handle_ingest(
        self, entries: list[tuple[str, dict[str, str]]], look_ahead: bool = False
    ) -> None:
        """Ingest a batch, make it durable, then acknowledge each entry (never before).

        ``look_ahead`` (new entries, embed-ahead on): the batch is embedded on the worker thread
        and the next batch is read and queued behind it before this one is stored. The drain
        passes ``False``: it replays a few batches after a crash and need not be fast.
        """
        parsed = self._admit(entries)
        if not parsed:
            return
        self._serve_waiting_rpc()
        if look_ahead and self._embed_ahead is not None:
            self._store_pipelined(parsed, self._embed_ahead.submit(_texts(parsed)))
        else:
            self._store(parsed, None)

    def _admit(self, entries: list[tuple[str, dict[str, str]]]) -> list[_Parsed]:
        """Parse entries: invalid ones are dead-lettered, a paused tenant's bulk writes wait."""
        parsed: list[_Parsed] = []
        for entry_id, fields in entries:
            try:
                # Masked again here: a writer that bypassed the client must not store secrets.
                req = masked_request(parse_request(fields.get("req", "")))
                parsed.append((entry_id, fields, req))
            except ValidationFailed as exc:
                self._dead_letter(entry_id, fields, exc)
        if self.worker is not None and parsed:
            ours, waiting = self.worker.keep(
                redis_keys.INGEST_STREAM, GROUP, [(e, req.tenant_id) for e, _, req in parsed]
            )
            self._has_deferred |= waiting
            parsed = [item for item in parsed if item[0] in ours]
            self.configs.ensure({req.tenant_id for _, _, req in parsed})  # a tenant just made
            held = self.configs.waiting((e, req.tenant_id) for e, _, req in parsed)
            self._has_deferred |= bool(held)  # its config is on the way: retried, not refused
            parsed = [item for item in parsed if item[0] not in held]
        return self._without_deferred(parsed)

    def _handle_ahead(self) -> None:
        """Store the batch the previous step read ahead, after the RPCs that arrived since."""
        assert self._ahead is not None
        ahead, self._ahead = self._ahead, None
        self._serve_waiting_rpc()  # reads stay as responsive as between two fresh batches
        self._store_pipelined(ahead.parsed, ahead.vectors)

    def _read_ahead(self) -> None:
        """Read the next ingest batch without blocking and start embedding it on the worker.

        Its entries are delivered but stay unacknowledged until their own flush, so a crash
        leaves them pending and the drain replays them like any other.
        """
        if self._embed_ahead is None or self._stop.is_set():
            return
        reply: Any = self.r.xreadgroup(
            GROUP, self.consumer, {redis_keys.INGEST_STREAM: ">"}, count=BATCH
        )
        parsed = self._admit(reply[0][1]) if reply else []
        if parsed:
            self._ahead = _AheadBatch(parsed, self._embed_ahead.submit(_texts(parsed)))

    def _store_pipelined(self, parsed: list[_Parsed], pending: PendingVectors) -> None:
        """Read ahead the next batch, then store this one with the vectors of ``pending``."""
        self._read_ahead()
        try:
            # An embedder error surfaces here and propagates exactly as an inline embed's would.
            vectors = pending.result()
            # A debt pause may have begun since these entries were admitted (debt.tick, RPCs).
            parsed, vectors = self._still_allowed(parsed, vectors)
            if parsed:
                self._store(parsed, vectors, more_coming=self._ahead is not None)
            else:
                self._commit()
        except BaseException:
            # This batch stays pending, as without look-ahead; the one read ahead too: forget it
            # and let the drain replay it rather than hold entries the drain will re-read.
            # So do the stored but uncommitted ones of the group: never acked without a flush.
            self._uncommitted, self._uncommitted_batches = [], 0
            self._drop_ahead()
            raise

    def _drop_ahead(self) -> None:
        """Forget the batch read ahead; its entries are pending, so ask for a drain."""
        if self._ahead is not None:
            self._ahead = None
            self._retry_pending = True

    def _still_allowed(
        self, parsed: list[_Parsed], vectors: list[list[float]]
    ) -> tuple[list[_Parsed], list[list[float]]]:
        """Re-apply the debt pause to entries admitted earlier, each vector kept with its entry."""
        kept = self._without_deferred(parsed)
        if len(kept) == len(parsed):
            return parsed, vectors
        by_id = {entry_id: v for (entry_id, _, _), v in zip(parsed, vectors, strict=True)}
        return kept, [by_id[entry_id] for entry_id, _, _ in kept]

    def _store(
        self,
        parsed: list[_Parsed],
        vectors: list[list[float]] | None,
        more_coming: bool = False,
    ) -> None:
        """Ingest (embedding here unless ``vectors`` are given), then flush and acknowledge.

        ``more_coming``: the next batch is already read; unless a group is already open, this
        batch's flush and acks wait for it (:data:`GROUP_COMMIT_BATCHES`).
        """
        parsed, vectors = self._without_held(parsed, vectors)
        if not parsed:
            self._commit()
            return
        # Stamped before and after: the readers step aside while it runs (decision 581); not
        # during the replay at start, when reads must come back within seconds (all serve).
        stamp = not self._first_drain
        if stamp:
            self.last_ingest = math.inf
        try:
            outcomes = self._ingest_isolated(parsed, vectors)
        finally:
            if stamp:
                self.last_ingest = time.monotonic()
        # A failing tenant is parked (nothing of it acked); a Redis failure propagates.
        for (entry_id, fields, req), result in outcomes:
            if isinstance(result, NikaError):
                self._dead_letter(entry_id, fields, result, req)  # nothing stored to flush
            else:
                self._uncommitted.append((entry_id, req, result.to_dict()))
        self._uncommitted_batches += 1
        if more_coming and self._uncommitted_batches < GROUP_COMMIT_BATCHES:
            return
        self._commit()

    def _ingest_isolated(
        self, parsed: list[_Parsed], vectors: list[list[float]] | None
    ) -> list[tuple[_Parsed, Any]]:
        """:func:`ingest_batch` on the batch; if the store fails, tenant by tenant.

        Returns each entry with its outcome, except those of tenants parked on the way.

        Raises:
            StoreUnavailable, redis.RedisError: Redis itself failed (every tenant waits).
        """
        try:
            results = ingest_batch(self.ctx, [req for _, _, req in parsed], vectors)
            return list(zip(parsed, results, strict=True))
        except StoreUnavailable as exc:
            self._check_redis(exc)
            tenants = sorted({req.tenant_id for _, _, req in parsed})
            if len(tenants) == 1:
                self.faults.park(tenants[0], exc)
                return []
        out: list[tuple[_Parsed, Any]] = []
        for tenant in tenants:
            index = [i for i, (_, _, req) in enumerate(parsed) if req.tenant_id == tenant]
            part = [parsed[i] for i in index]
            part_vectors = [vectors[i] for i in index] if vectors is not None else None
            try:
                # A replay of what the failed attempt wrote rewrites the same point ids.
                results = ingest_batch(self.ctx, [req for _, _, req in part], part_vectors)
            except StoreUnavailable as exc:
                self._check_redis(exc)
                self.faults.park(tenant, exc)
                continue
            out.extend(zip(part, results, strict=True))
        return out

    def _check_redis(self, exc: StoreUnavailable) -> None:
        """Re-raise ``exc`` if Redis is the one failing: parking tenants would not help."""
        try:
            self.r.ping()
        except redis.RedisError:
            raise exc from None

    def _commit(self) -> None:
        """Flush the store, then acknowledge every stored entry of the group (never before).

        Flushed tenant by tenant where the store can: a tenant whose flush fails (a shard
        deleted under it) is parked and its entries stay pending; the others are acknowledged.
        """
        if not self._uncommitted_batches:
            return
        acks, self._uncommitted, self._uncommitted_batches = self._uncommitted, [], 0
        # If the flush fails, the entries stay pending and the drain replays them (idempotent):
        # never kept here as well, or a later commit would acknowledge them a second time.
        durable = self._flush_for_commit({req.tenant_id for _, req, _ in acks})
        acks = [item for item in acks if item[1].tenant_id in durable]
        self._ack(acks)
        self.faults.recovered({req.tenant_id for _, req, _ in acks})
        self.processed += len(acks)
        self.beat()

    def _held(self, tenant_id: str) -> bool:
        return self.faults.is_parked(tenant_id) or self.resets.holds(tenant_id)

    def _paused(self, tenant_id: str) -> bool:
        return bool(self.r.exists(redis_keys.ingest_paused(tenant_id)))

    def _deferrable(self, fields: Mapping[str, str]) -> bool:
        """A bulk write of a paused tenant: it waits, however often it was delivered."""
        try:
            req = parse_request(fields.get("req", ""))
        except ValidationFailed:
            return False
        from nika_tui.engine.reset import reset_unfinished  # at start only: not on every import

        if self.faults.has_alarm(req.tenant_id) or reset_unfinished(self.ctx, req.tenant_id):
            return True  # retried on purpose while its store failed or it was reset: no poison
        return not ingest_allowed(self._paused(req.tenant_id), req.meta.trigger)

    def _without_deferred(
        self, parsed: list[tuple[str, dict[str, str], RememberRequest]]
    ) -> list[tuple[str, dict[str, str], RememberRequest]]:
        """Hold back bulk writes of tenants whose ingestion the debt audit paused.

        They stay pending (neither acknowledged nor dropped) and are retried every
        :data:`DEFER_RETRY_S` until the ``ingest_paused`` key is gone; other writes (a person's,
        a hook's) go through (``nika_tui.domain.debt.ingest_allowed``).
        """
        if any(self._held(req.tenant_id) for _, _, req in parsed):
            # A parked tenant's entries stay pending behind the ones that failed; a tenant being
            # reset's, until its new store is live (then replayed into it).
            parsed = [item for item in parsed if not self._held(item[2].tenant_id)]
        paused = {t for t in {req.tenant_id for _, _, req in parsed} if self._paused(t)}
        if not paused:
            return parsed
        keep = [
            item
            for item in parsed
            if ingest_allowed(item[2].tenant_id in paused, item[2].meta.trigger)
        ]
        if len(keep) < len(parsed):
            self._has_deferred = True
            log.info("debt pause: %d bulk writes deferred", len(parsed) - len(keep))
        return keep

    def _flush_for_commit(self, tenants: set[str]) -> set[str]:
        """Flush the group's writes before anything is acknowledged; return the tenants whose
        writes are now durable.

        Tenant by tenant where the store can: a tenant whose flush fails (a shard deleted under
        it) is parked and left out, the others go on. A store without per-tenant flushes is
        flushed once for all (its failure stops the commit: nothing is acknowledged).
        """
        flush_tenant = getattr(self.ctx.vectors, "flush_tenant", None)
        if not callable(flush_tenant):
            self._flush()
            return set(tenants)
        durable: set[str] = set()
        for tenant in sorted(tenants):
            try:
                flush_tenant(tenant)
            except StoreUnavailable as exc:
                self.faults.park(tenant, exc)
                continue
            durable.add(tenant)
        return durable

    def _flush(self) -> None:
        """Make every write of the batch durable on disk before anything is acknowledged."""
        flush = getattr(self.ctx.vectors, "flush", None)
        if callable(flush):
            flush()

    def _ack(self, acks: Sequence[tuple[str, RememberRequest, Mapping[str, Any]]]) -> None:
        """Acknowledge stored entries and hand their outcomes to waiting writers.

        One MULTI/EXEC for the batch, with one XACK and one XDEL naming every entry: a round
        trip per entry was a tenth of the store's CPU per memory, measured; atomic all the
        same (every entry or none is acknowledged).
        """
        if not acks:
            return
        if self.worker is not None:
            self._fenced_ack(acks)
            return
        pipe = self.r.pipeline(transaction=True)
        ids = [entry_id for entry_id, _, _ in acks]
        pipe.xack(redis_keys.INGEST_STREAM, GROUP, *ids)
        pipe.xdel(redis_keys.INGEST_STREAM, *ids)
        for _, req, outcome in acks:
            if req.idempotency_key:
                done = redis_keys.ingest_done(req.tenant_id, req.idempotency_key)
                pipe.rpush(done, json.dumps(dict(outcome), default=str))
                pipe.expire(done, INGEST_DONE_TTL_S)
        pipe.execute()
        self.automemory.touch({req.tenant_id for _, req, _ in acks})

    def _fenced_ack(self, acks: Sequence[tuple[str, RememberRequest, Mapping[str, Any]]]) -> None:
        """:meth:`_ack` through the lease fence, tenant by tenant (see ``engine/leases.py``)."""
        assert self.worker is not None
        by_tenant: dict[str, tuple[list[str], list[tuple[str, str]]]] = {}
        for entry_id, req, outcome in acks:
            ids, done = by_tenant.setdefault(req.tenant_id, ([], []))
            ids.append(entry_id)
            if req.idempotency_key:
                key = redis_keys.ingest_done(req.tenant_id, req.idempotency_key)
                done.append((key, json.dumps(dict(outcome), default=str)))
        if not self.worker.ack(GROUP, by_tenant, INGEST_DONE_TTL_S):
            self._retry_pending = True  # a lost tenant's entries: the drain hands them off
        self.automemory.touch(by_tenant.keys())

    def _dead_letter(
        self,
        entry_id: str,
        fields: Mapping[str, str],
        exc: NikaError,
        req: RememberRequest | None = None,
    ) -> None:
        log.warning("ingest entry %s refused: %s", entry_id, exc)
        dead: dict[Any, Any] = {"entry_id": entry_id, "req": fields.get("req", "")}
        dead.update({k: v for k, v in error_body(exc).items() if k != "fields"})  # flat
        pipe = self.r.pipeline(transaction=True)
        pipe.xadd(redis_keys.INGEST_DEAD, dead)
        pipe.xack(redis_keys.INGEST_STREAM, GROUP, entry_id)
        pipe.xdel(redis_keys.INGEST_STREAM, entry_id)
        if req is not None and req.idempotency_key:
            done = redis_keys.ingest_done(req.tenant_id, req.idempotency_key)
            pipe.rpush(done, json.dumps(error_body(exc)))
            pipe.expire(done, INGEST_DONE_TTL_S)
        pipe.execute()
