"""The memory service: the single writer of the vector store (``nika serve``).

One loop, one thread, one process: it reads the ingest stream and the RPC stream with one
``XREADGROUP`` (both groups are named ``memory-service``), answers RPCs first, and ingests in
batches (one embedder call per batch). Being single-threaded is what makes it the single writer:
Qdrant Edge shards are opened by this process only, and no two operations interleave.
The one exception is embed-ahead (:mod:`nika_tui.engine.embed_ahead`): while batch k is stored
in the loop, batch k+1 (read, not yet acknowledged) is embedded on one worker thread that
touches no store. ``NIKA_EMBED_AHEAD=0`` (or ``MemoryService(embed_ahead=False)``) turns it off.

Durability: an ingest entry is acknowledged (``XACK`` + ``XDEL``) only after :func:`ingest`
returned and the store was flushed, i.e. after the point was written durably. Under a backlog
(the next batch already read ahead), two batches share one flush and one acknowledgement
(group commit, :data:`GROUP_COMMIT_BATCHES`); a batch with nothing behind it is committed at
once. On start the service first re-processes
its pending entries (those read but never acknowledged, ``XAUTOCLAIM``-ed from any previous
consumer), so ``kill -9`` at any moment loses nothing; a replay rewrites the same point id, so
it never duplicates. An entry that fails for a reason a retry cannot fix (unknown tenant,
invalid fields) goes to the dead-letter stream ``INGEST_DEAD`` with its error, and its writer is
told; a failing store (``StoreUnavailable``) leaves the entry pending and the service retries
after a back-off. An entry delivered :data:`MAX_DELIVERIES` times without success is
dead-lettered too, so one poisonous entry cannot crash-loop the service.

Fault isolation (:mod:`nika_tui.engine.tenant_faults`): when a batch's store fails, it is
ingested and flushed tenant by tenant; a tenant that still fails is parked (its entries pending,
an alarm in Redis) while every other tenant's ingest goes on. Only a Redis failure stops all.

Liveness: ``SERVICE_HEARTBEAT`` holds ``{pid, host, started_at}`` with a TTL of
:data:`HEARTBEAT_TTL_S`, refreshed every :data:`HEARTBEAT_EVERY_S`.

Workers (issue 18): with a :class:`~nika_tui.engine.worker.Worker` (``nika serve`` always passes
one), the loop consumes and answers only for tenants whose lease it holds, hands the others'
entries to their holders, and acknowledges through the lease fence (see ``engine/worker.py``).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from nika_tui.domain.debt import ingest_allowed
from nika_tui.domain.ports import VectorStore
from nika_tui.domain.requests import RememberRequest
from nika_tui.engine.context import EngineContext
from nika_tui.engine.embed_ahead import EmbedAhead, PendingVectors
from nika_tui.engine.ingest import ingest_batch, parse_request
from nika_tui.engine.ops import OpHandler
from nika_tui.engine.ops_registry import load_ops
from nika_tui.engine.tenant_faults import PARK_RETRY_S, TenantFaults
from nika_tui.engine.worker import Worker
from nika_tui.errors import NikaError, StoreUnavailable, ValidationFailed
from nika_tui.paths import data_dir, ensure_private_dir
from nika_tui.services import redis_keys
from nika_tui.services.liveness import process_alive
from nika_tui.services.secret_mask import masked_request

log = logging.getLogger("nika.service")

CONSUMER = "memory-service"
"""Fixed consumer name: a restarted service finds its own pending entries under it."""
HEARTBEAT_TTL_S = 10
HEARTBEAT_EVERY_S = 2.0
BATCH = 128
"""Entries read per XREADGROUP (one embedder call embeds an ingest batch)."""
BLOCK_MS = 1000
INGEST_DONE_TTL_S = 600
"""Seconds an ingest outcome waits for its writer in ``ingest_done`` before expiring."""
GROUP_COMMIT_BATCHES = 2
"""Batches flushed and acknowledged together while a backlog lasts.

A flush costs about the same for 16 points as for 256 (~26 ms wall, fsyncs of every segment
and index file, measured), and with the acks it was a third of the store side of an ingest.
Under a backlog the first batch's acks wait for the second batch (~0.7 s at 128 facts); alone,
a batch is acknowledged as soon as it is flushed.
"""
MAX_DELIVERIES = 10
RETRY_BACKOFF_S = 2.0
DEFER_RETRY_S = 5.0
"""How often bulk writes held back by a debt pause are looked at again."""
READ_ONLY_OPS = frozenset({"recall", "history", "review.list", "stats", "ping"})
"""Ops that write nothing; after any other op the store is flushed before the reply."""

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


def _error_body(exc: NikaError) -> dict[str, str]:
    return {"error": exc.message, "hint": exc.hint, "kind": type(exc).__name__}


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


class MemoryService:
    """The ingest + RPC loop around one :class:`EngineContext`."""

    def __init__(
        self,
        ctx: EngineContext,
        consumer: str = CONSUMER,
        embed_ahead: bool | None = None,
        worker: Worker | None = None,
    ) -> None:
        """Args:
        ctx: the engine context (with embed-ahead on, its embedder is replaced by a
            serialised wrapper so the loop's own embeds and the worker's never overlap).
        consumer: consumer name in the groups.
        embed_ahead: embed the next ingest batch while storing the current one; ``None``
            reads ``NIKA_EMBED_AHEAD`` from ``ctx.env`` (on unless ``0``).
        worker: lease-partitioned mode (its id is the consumer name); ``None``: this service
            serves every tenant alone (tests of the loop itself).
        """
        self.ctx = ctx
        self.r = ctx.redis
        self.worker = worker
        self.consumer = worker.id if worker is not None else consumer
        self.ops: dict[str, OpHandler] = load_ops()
        self._stop = threading.Event()
        self._last_beat = 0.0
        self._retry_pending = True
        self._first_drain = True
        self._has_deferred = False
        self._last_retry = time.monotonic()
        self._started_at = ctx.clock().isoformat()
        self.processed = 0
        if embed_ahead is None:
            embed_ahead = ctx.env.get("NIKA_EMBED_AHEAD", "1").strip() != "0"
        self._embed_ahead: EmbedAhead | None = None
        if embed_ahead:
            self._embed_ahead = EmbedAhead(ctx.embedder)
            ctx.embedder = self._embed_ahead.embedder  # recall's query embeds share its lock
        self._ahead: _AheadBatch | None = None
        """The next ingest batch, read during the last step and being embedded."""
        self._uncommitted: list[tuple[str, RememberRequest, Mapping[str, Any]]] = []
        """Entries stored but not yet flushed and acknowledged (group commit)."""
        self._uncommitted_batches = 0
        from nika_tui.engine.debt.schedule import DebtScheduler

        # Debt audit every 6 h and the REM pass when kernels sleep (issue 5), from this loop.
        self.debt = DebtScheduler(ctx)
        retry_s = float(ctx.env.get("NIKA_PARK_RETRY_S", PARK_RETRY_S))
        self.faults = TenantFaults(self.r, ctx.clock, retry_s=retry_s)
        """Tenants whose store failed: parked, alarmed, retried (see the module docstring)."""
        from nika_tui.scale.scheduler import ScaleScheduler

        # Strategy B (issue 18): host samples once a minute, scale plans per auto_actions.scale.
        self.scale = ScaleScheduler(ctx.redis, ctx.env)
        from nika_tui.quota.tokens import QuotaWatcher

        # Tokens per day (issue 18): warn at 80%, pause or ask at 100%.
        self.quota = QuotaWatcher(ctx.redis, ctx.env)
        from nika_tui.automemory.runner import AutoMemoryScheduler

        # The agents' native auto-memory, synced after ingest (debounced) and after REM (#20).
        self.automemory = AutoMemoryScheduler(ctx)

    # --- lifecycle ----------------------------------------------------------------------
    def stop(self) -> None:
        """Ask the loop to finish the current entry and return."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        """True once :meth:`stop` was called."""
        return self._stop.is_set()

    def check_single(self) -> None:
        """Refuse to start beside a live service (see :func:`ensure_single`), per worker."""
        if self.worker is None or self.worker.primary:
            ensure_single(self.r)
        if self.worker is not None:
            self.worker.check_single()

    def setup(self) -> None:
        """Create the consumer groups and claim entries left pending by any other consumer."""
        for stream in (redis_keys.INGEST_STREAM, redis_keys.RPC_STREAM):
            try:
                self.r.xgroup_create(stream, GROUP, id="0", mkstream=True)
            except redis.ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise
        if self.worker is not None:
            # Only entries of consumers that are not live: the others belong to live workers.
            self.worker.tick(GROUP, force=True)
            self.worker.start()
            return
        start = "0-0"
        while True:
            # Not JUSTID: redis-py drops the cursor from a JUSTID reply.
            reply: Any = self.r.xautoclaim(
                redis_keys.INGEST_STREAM, GROUP, self.consumer, 0, start_id=start, count=500
            )
            start = str(reply[0])
            if start == "0-0":
                break
        self.faults.load()

    def beat(self, force: bool = False) -> None:
        """Refresh the heartbeat (at most every HEARTBEAT_EVERY_S unless ``force``)."""
        # The worker paces itself (a fifth of the lease TTL): renewals must not wait for this.
        if self.worker is not None and self.worker.tick(GROUP):
            self._retry_pending = True  # entries handed to us, claimed, or of a lost tenant
        now = time.monotonic()
        if not force and now - self._last_beat < HEARTBEAT_EVERY_S:
            return
        info = {"pid": os.getpid(), "host": socket.gethostname(), "started_at": self._started_at}
        if self.worker is not None and not self.worker.primary:
            self._last_beat = now
            return  # the service heartbeat is the primary's (`nika up` waits for it)
        self.r.set(redis_keys.SERVICE_HEARTBEAT, json.dumps(info), ex=HEARTBEAT_TTL_S)
        self._last_beat = now

    def _clear_heartbeat(self) -> None:
        raw = self.r.get(redis_keys.SERVICE_HEARTBEAT)
        try:
            info = json.loads(str(raw)) if raw else None
        except json.JSONDecodeError:
            info = None
        if isinstance(info, dict) and info.get("pid") == os.getpid():
            self.r.delete(redis_keys.SERVICE_HEARTBEAT)

    def run(self) -> None:
        """Serve until :meth:`stop` (pending entries first, then new ones)."""
        self.check_single()
        self.setup()
        self.beat(force=True)
        log.info("memory service started (pid %s, ops: %s)", os.getpid(), ", ".join(self.ops))
        try:
            while not self._stop.is_set():
                self.beat()
                try:
                    self.step()
                    done: list[str] = []
                    if self.worker is None or self.worker.alone():
                        # Audits and REM passes walk every tenant: only a lone worker may.
                        done = self.debt.tick()
                    self.scale.tick()
                    self.quota.tick()
                    self.automemory.touch(d[4:] for d in done if d.startswith("rem:"))
                    self.automemory.tick()
                except StoreUnavailable as exc:
                    log.warning("store unavailable, retrying in %.0fs: %s", RETRY_BACKOFF_S, exc)
                    self._retry_pending = True
                    self._stop.wait(RETRY_BACKOFF_S)
                except redis.ResponseError as exc:
                    if "NOGROUP" not in str(exc):
                        raise
                    log.warning("a stream or its group vanished (%s): recreating them", exc)
                    self.setup()
                except (redis.ConnectionError, redis.TimeoutError) as exc:
                    log.warning("redis unavailable, retrying in %.0fs: %s", RETRY_BACKOFF_S, exc)
                    self._retry_pending = True
                    self._stop.wait(RETRY_BACKOFF_S)
        finally:
            try:
                self._commit()  # stored entries of a group in progress: flush and ack them now
            except (StoreUnavailable, redis.RedisError) as exc:
                log.warning("could not commit the last batches, they will be replayed: %s", exc)
            self.debt.close()  # a running index build: child killed, its shard back online
            if self.worker is not None:
                try:
                    self.worker.stop()  # leases released: the other workers take over now
                except (StoreUnavailable, redis.RedisError) as exc:
                    log.warning("could not release the leases (they expire by themselves): %s", exc)
            try:
                self._clear_heartbeat()
            except redis.RedisError:
                log.warning("could not clear the heartbeat (it expires by itself)")
            log.info("memory service stopped after %d ingests", self.processed)

    # --- one iteration --------------------------------------------------------------------
    def step(self, block_ms: int = BLOCK_MS) -> None:
        """Process pending entries (if a retry is due), then the batch read ahead or new ones."""
        if self._has_deferred and time.monotonic() - self._last_retry >= DEFER_RETRY_S:
            self._retry_pending = True
        if self.faults.retry_due():
            self._retry_pending = True  # parked tenants released: the drain replays theirs
        if self._retry_pending:
            # The drain re-reads every unacknowledged entry, the look-ahead's included: storing
            # the look-ahead as well would ingest those twice.
            self._ahead = None
            self._commit()  # stored before the drain re-reads every unacknowledged entry
            self._retry_pending = False
            self._has_deferred = False
            self._last_retry = time.monotonic()
            self._drain_pending(check_deliveries=self._first_drain)
            self._first_drain = False
            self._drain_pending_rpc()
        if self._ahead is not None:
            self._handle_ahead()  # already read: no new batch until it is stored
            return
        reply: Any = self.r.xreadgroup(
            GROUP,
            self.consumer,
            {redis_keys.RPC_STREAM: ">", redis_keys.INGEST_STREAM: ">"},
            count=BATCH,
            block=block_ms,
        )
        rpc: list[tuple[str, dict[str, str]]] = []
        ingest_entries: list[tuple[str, dict[str, str]]] = []
        for stream, entries in reply or []:
            (rpc if stream == redis_keys.RPC_STREAM else ingest_entries).extend(entries)
        for entry_id, fields in rpc:
            self._handle_rpc(entry_id, fields)
        if ingest_entries:
            self._handle_ingest(ingest_entries, look_ahead=True)

    def _drain_pending(self, check_deliveries: bool = False) -> None:
        """Re-process every ingest entry read earlier but never acknowledged (crash recovery).

        Only at start (``check_deliveries``) is an entry delivered too often dead-lettered: a
        crash loop, not a store outage (during which entries are retried without limit).
        """
        cursor = "0"  # entries left pending on purpose (deferred) are stepped over
        while not self._stop.is_set():
            reply: Any = self.r.xreadgroup(
                GROUP, self.consumer, {redis_keys.INGEST_STREAM: cursor}, count=BATCH
            )
            entries = reply[0][1] if reply else []
            if not entries:
                return
            cursor = entries[-1][0]
            log.info("replaying %d unacknowledged ingest entries", len(entries))
            deliveries = self._deliveries(entries) if check_deliveries else {}
            todo: list[tuple[str, dict[str, str]]] = []
            for entry_id, fields in entries:
                if not fields:  # deleted while pending: nothing left to do
                    self.r.xack(redis_keys.INGEST_STREAM, GROUP, entry_id)
                elif deliveries.get(entry_id, 0) > MAX_DELIVERIES and not self._deferrable(fields):
                    self._dead_letter(
                        entry_id,
                        fields,
                        NikaError(
                            f"delivered {deliveries[entry_id]} times without success",
                            "inspect the entry in the dead-letter stream and re-remember it",
                        ),
                    )
                else:
                    todo.append((entry_id, fields))
            if todo:
                self._handle_ingest(todo)

    def _drain_pending_rpc(self) -> None:
        reply: Any = self.r.xreadgroup(
            GROUP, self.consumer, {redis_keys.RPC_STREAM: "0"}, count=1000
        )
        for entry_id, fields in reply[0][1] if reply else []:
            self._handle_rpc(entry_id, fields or {})

    def _deliveries(self, entries: list[tuple[str, dict[str, str]]]) -> dict[str, int]:
        first, last = entries[0][0], entries[-1][0]
        rows: Any = self.r.xpending_range(
            redis_keys.INGEST_STREAM,
            GROUP,
            min=first,
            max=last,
            count=len(entries) + 10,
            consumername=self.consumer,
        )
        return {str(row["message_id"]): int(row["times_delivered"]) for row in rows}

    # --- ingest ---------------------------------------------------------------------------
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
        if self._embed_ahead is None or self.stopping:
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
        # A failing tenant is parked (nothing of it acked); a Redis failure propagates.
        for (entry_id, fields, req), result in self._ingest_isolated(parsed, vectors):
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

    def _paused(self, tenant_id: str) -> bool:
        return bool(self.r.exists(redis_keys.ingest_paused(tenant_id)))

    def _deferrable(self, fields: Mapping[str, str]) -> bool:
        """A bulk write of a paused tenant: it waits, however often it was delivered."""
        try:
            req = parse_request(fields.get("req", ""))
        except ValidationFailed:
            return False
        if self.faults.has_alarm(req.tenant_id):
            return True  # retried on purpose while its store was failing, not a poison entry
        return not ingest_allowed(self._paused(req.tenant_id), req.meta.trigger)

    def _without_deferred(
        self, parsed: list[tuple[str, dict[str, str], RememberRequest]]
    ) -> list[tuple[str, dict[str, str], RememberRequest]]:
        """Hold back bulk writes of tenants whose ingestion the debt audit paused.

        They stay pending (neither acknowledged nor dropped) and are retried every
        :data:`DEFER_RETRY_S` until the ``ingest_paused`` key is gone; other writes (a person's,
        a hook's) go through (``nika_tui.domain.debt.ingest_allowed``).
        """
        if any(self.faults.is_parked(req.tenant_id) for _, _, req in parsed):
            # A parked tenant's entries stay pending behind the ones that failed.
            parsed = [item for item in parsed if not self.faults.is_parked(item[2].tenant_id)]
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
        dead.update(_error_body(exc))
        pipe = self.r.pipeline(transaction=True)
        pipe.xadd(redis_keys.INGEST_DEAD, dead)
        pipe.xack(redis_keys.INGEST_STREAM, GROUP, entry_id)
        pipe.xdel(redis_keys.INGEST_STREAM, entry_id)
        if req is not None and req.idempotency_key:
            done = redis_keys.ingest_done(req.tenant_id, req.idempotency_key)
            pipe.rpush(done, json.dumps(_error_body(exc)))
            pipe.expire(done, INGEST_DONE_TTL_S)
        pipe.execute()

    # --- RPC ------------------------------------------------------------------------------
    def _serve_waiting_rpc(self) -> None:
        """Answer RPCs that arrived during a long ingest batch (reads stay responsive)."""
        reply: Any = self.r.xreadgroup(
            GROUP, self.consumer, {redis_keys.RPC_STREAM: ">"}, count=BATCH
        )
        for entry_id, fields in reply[0][1] if reply else []:
            self._handle_rpc(entry_id, fields)

    def _handle_rpc(self, entry_id: str, fields: Mapping[str, str]) -> None:
        if self.worker is not None:
            ours, waiting = self.worker.keep(
                redis_keys.RPC_STREAM, GROUP, [(entry_id, _rpc_tenant(fields))]
            )
            self._has_deferred |= waiting
            if entry_id not in ours:
                return  # handed to the tenant's holder, or left for our lapsing lease
        request_id = fields.get("id", "")
        try:
            deadline = float(fields.get("deadline", "0"))
        except ValueError:
            deadline = 0.0
        reply: dict[str, Any] | None = None
        if request_id and deadline >= time.time():
            op = fields.get("op", "")
            reply = self._dispatch(op, fields.get("body", "{}"))
            if op not in READ_ONLY_OPS:
                self._flush()
        pipe = self.r.pipeline(transaction=True)
        pipe.xack(redis_keys.RPC_STREAM, GROUP, entry_id)
        pipe.xdel(redis_keys.RPC_STREAM, entry_id)
        if reply is not None:
            key = redis_keys.rpc_reply(request_id)
            pipe.lpush(key, json.dumps(reply, default=str))
            pipe.expire(key, 60)
        pipe.execute()

    def _dispatch(self, op: str, raw_body: str) -> dict[str, Any]:
        handler = self.ops.get(op)
        if handler is None:
            return {"ok": False, **_error_body(ValidationFailed(
                f"unknown memory-service operation {op!r}",
                "upgrade the caller or the service (`nika down && nika up`)",
            ))}  # fmt: skip
        try:
            body = json.loads(raw_body)
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
            result = handler(self.ctx, body)
            if op == "rem.run":
                self.automemory.touch(result.get("tenants", {}) or [])
            return {"ok": True, "result": result}
        except NikaError as exc:
            return {"ok": False, **_error_body(exc)}
        except ValueError as exc:
            return {"ok": False, **_error_body(ValidationFailed(f"bad {op} request: {exc}"))}
        except redis.RedisError as exc:
            return {"ok": False, **_error_body(StoreUnavailable(f"redis failed: {exc}"))}
        except Exception as exc:
            # RPC edge: one failing op must not stop the single writer; the caller gets the
            # error and the traceback goes to the log.
            log.exception("op %s failed", op)
            return {"ok": False, **_error_body(NikaError(f"{op} failed: {exc!r}", "see the log"))}


def _rpc_tenant(fields: Mapping[str, str]) -> str | None:
    """The tenant an RPC is addressed to (its body's ``tenant_id``), if any."""
    try:
        body = json.loads(fields.get("body", "{}"))
    except json.JSONDecodeError:
        return None
    tenant = body.get("tenant_id") if isinstance(body, dict) else None
    return tenant if isinstance(tenant, str) and tenant else None


def build_context(env: Mapping[str, str] | None = None) -> EngineContext:
    """The service's context from the environment (starts the embedded Redis if needed)."""
    from nika_tui.services.embeddings import open_embedder
    from nika_tui.services.redis_server import connect
    from nika_tui.services.vectors import open_vector_store

    e: Mapping[str, str] = dict(os.environ if env is None else env)
    r = connect(e, start=True)
    embedder = open_embedder(e)
    vectors: VectorStore
    if e.get("QDRANT_URL", "").strip():
        vectors = open_vector_store(e, embedder.dimension)
    else:
        from nika_tui.services.vectors.edge import EdgeVectorStore

        # Flushed once per batch by the service (before acking), not after every write: the
        # WAL already survives a killed process, and per-write flushes cost ~0.3 s each here.
        vectors = EdgeVectorStore(
            ensure_private_dir(data_dir(e) / "qdrant"), embedder.dimension, flush_writes=False
        )
    return EngineContext(env=e, redis=r, vectors=vectors, embedder=embedder)
