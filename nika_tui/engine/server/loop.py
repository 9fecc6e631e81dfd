"""The memory service: the single writer of the vector store (``nika serve``).

One loop thread writes: it reads the ingest stream (and, without readers, the RPC stream) with
one ``XREADGROUP`` (group ``memory-service``) and ingests in batches. Only this thread writes a
store, so no two writes interleave. Beside it: embed-ahead (:mod:`nika_tui.engine.embed_ahead`,
batch k+1 embedded on a worker thread while batch k is stored; ``NIKA_EMBED_AHEAD=0`` turns it
off) and the reader threads (:mod:`.reads`), which only read.

Durability: an ingest entry is acknowledged (``XACK`` + ``XDEL``) only after :func:`ingest`
returned and the store was flushed, i.e. after the point was written durably. Under a backlog
(the next batch already read ahead), two batches share one flush and one acknowledgement
(group commit, ``pipeline.GROUP_COMMIT_BATCHES``); a batch with nothing behind it is committed
at once (the state machine is :mod:`.pipeline`). On start the service first re-processes
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

A tenant's fresh start (:mod:`.resets`, decision 505) runs on a thread of its own: only that
tenant's writes wait (its entries pending, its write RPCs "busy"), its switch runs here between
two batches, and every other tenant's writes go on.

Liveness (:mod:`.liveness`): a heartbeat key with a TTL. RPCs: :mod:`.rpc`'s table; reads by the
readers (never behind an ingest batch or the replay, issue 16), writes by the loop.

Workers (issue 18): with a :class:`~nika_tui.engine.worker.Worker` (``nika serve`` always passes
one), the loop consumes and answers only for tenants whose lease it holds, hands the others'
entries to their holders, and acknowledges through the lease fence (see ``engine/worker.py``).
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import redis

from nika_tui.domain.ports import Embedder
from nika_tui.domain.requests import RememberRequest
from nika_tui.engine.context import EngineContext
from nika_tui.engine.embed_ahead import EmbedAhead
from nika_tui.engine.embed_gate import EmbedGate
from nika_tui.engine.server.liveness import (
    HEARTBEAT_EVERY_S,
    clear_heartbeat,
    clear_stale_pause,
    ensure_single,
    write_heartbeat,
)
from nika_tui.engine.server.periodic import periodic_jobs
from nika_tui.engine.server.pipeline import BATCH, GROUP, IngestPipeline, _AheadBatch
from nika_tui.engine.server.reads import INGEST_QUIET_S, ReadPool
from nika_tui.engine.server.reset_hold import ResetHold
from nika_tui.engine.server.resets import TenantResets
from nika_tui.engine.server.rpc import OpHandler, build_rpc_table
from nika_tui.engine.server.rpc_loop import RpcServing
from nika_tui.engine.tenant_faults import TenantFaults
from nika_tui.engine.worker import Worker
from nika_tui.errors import NikaError, StoreUnavailable
from nika_tui.services import redis_keys

log = logging.getLogger("nika.service")

CONSUMER = "memory-service"
"""Fixed consumer name: a restarted service finds its own pending entries under it."""
BLOCK_MS = 1000
MAX_DELIVERIES = 10
RETRY_BACKOFF_S = 2.0
DEFER_RETRY_S = 5.0
"""How often bulk writes held back by a debt pause are looked at again."""
WRITES_POLL_MS = 100
"""With readers, the longest an idle loop waits before looking at the writes they passed."""


class MemoryService(IngestPipeline, RpcServing, ResetHold):
    """The ingest + RPC loop around one :class:`EngineContext`."""

    def __init__(
        self,
        ctx: EngineContext,
        consumer: str = CONSUMER,
        embed_ahead: bool | None = None,
        worker: Worker | None = None,
        readers: int | None = None,
        bulk_embedder: Callable[[Embedder], Embedder] | None = None,
    ) -> None:
        """Args:
        ctx: the engine context (with embed-ahead on, its embedder is replaced by a
            serialised wrapper so the loop's own embeds and the worker's never overlap).
        consumer: consumer name in the groups.
        embed_ahead: embed the next ingest batch while storing the current one; ``None``
            reads ``NIKA_EMBED_AHEAD`` from ``ctx.settings`` (on unless ``0``).
        worker: lease-partitioned mode (its id is the consumer name); ``None``: this service
            serves every tenant alone (tests of the loop itself).
        readers: reader threads :meth:`run` starts (``0``: none); ``None``: ``NIKA_READERS``.
        bulk_embedder: given the gate's bulk door (the service's own model), the embedder
            the ingest uses instead (``nika serve``: a child process that falls back to the
            door, decision 583); ``None``: the door.
        """
        self.ctx = ctx
        self.r = ctx.redis
        self.worker = worker
        self.consumer = worker.id if worker is not None else consumer
        self.ops: dict[str, OpHandler] = build_rpc_table()
        """The RPC table: op name → handler."""
        self._stop = threading.Event()
        self._last_beat = 0.0
        self._retry_pending = True
        self._first_drain = True
        self._has_deferred = False
        self._last_retry = time.monotonic()
        self._started_at = ctx.clock().isoformat()
        self.processed = 0
        settings = ctx.settings
        embed_ahead = settings.embed_ahead if embed_ahead is None else embed_ahead
        # One model for ingest and reads: queries go first, between bulk micro-batches.
        self._model = ctx.embedder
        self.gate = EmbedGate(ctx.embedder)
        bulk = self.gate.bulk if bulk_embedder is None else bulk_embedder(self.gate.bulk)
        self._bulk_elsewhere: Callable[[], bool] = getattr(bulk, "serving", lambda: False)
        """True while the ingest's forward passes run in another process (decision 583)."""
        ctx.embedder = bulk
        self.reads: ReadPool | None = None
        self.last_ingest = -math.inf
        """The reader threads while :meth:`run` serves (see ``server/reads.py``)."""
        self._readers = settings.readers if readers is None else readers
        self._shed_s = settings.read_shed_s
        self._embed_ahead: EmbedAhead | None = None
        if embed_ahead:
            self._embed_ahead = EmbedAhead(ctx.embedder)
            ctx.embedder = self._embed_ahead.embedder  # recall's query embeds share its lock
        self._ahead: _AheadBatch | None = None
        """The next ingest batch, read during the last step and being embedded."""
        self._uncommitted: list[tuple[str, RememberRequest, Mapping[str, Any]]] = []
        """Entries stored but not yet flushed and acknowledged (group commit)."""
        self._uncommitted_batches = 0
        self.faults = TenantFaults(self.r, ctx.clock, retry_s=settings.park_retry_s)
        """Tenants whose store failed: parked, alarmed, retried (see the module docstring)."""
        self.resets = TenantResets(ctx)
        """The running fresh start, its tenant held (``server/reset_hold.py``)."""
        ctx.start_reset = self.start_autonomous_reset  # the debt audit's, from its tick here
        if worker is not None:
            worker.keep_now = self.resets.holds  # never moved to another worker mid-reset
        jobs = periodic_jobs(ctx, self.consumer, worker)
        self.debt, self.scale, self.reconcile = jobs.debt, jobs.scale, jobs.reconcile
        self.quota, self.automemory, self.configs = jobs.quota, jobs.automemory, jobs.configs

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
        self.configs.tick(force=True)  # a joined worker knows its tenants before taking one
        clear_stale_pause(self.r)  # a reset killed with its process no longer pauses writes
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
        if self.configs.tick() and not self.configs.primary:
            self._retry_pending = True  # entries of a tenant whose config just came: now
        if self.worker is not None and self.worker.tick(GROUP):
            self._retry_pending = True  # entries handed to us, claimed, or of a lost tenant
        now = time.monotonic()
        if not force and now - self._last_beat < HEARTBEAT_EVERY_S:
            return
        if self.worker is not None and not self.worker.primary:
            self._last_beat = now
            return  # the service heartbeat is the primary's (`nika up` waits for it)
        write_heartbeat(self.r, self._started_at)
        self._last_beat = now

    def run(self) -> None:
        """Serve until :meth:`stop` (pending entries first, then new ones)."""
        self.check_single()
        self.setup()
        self.beat(force=True)
        if self._readers > 0:
            # Started before the first step: reads are answered during the replay of a backlog.
            beat = self.worker is None or self.worker.primary  # the primary's heartbeat only
            self.reads = ReadPool(
                self.ctx, self.gate.query, self.consumer, self.worker, self._readers, self._shed_s,
                self._started_at if beat else None, self.configs.missing,
                self.ingesting,
            )  # fmt: skip
            self.reads.start()
        log.info("memory service started (pid %s, ops: %s)", os.getpid(), ", ".join(self.ops))
        # A fast-start model (576) swaps to torch on its own timer, not now: importing torch
        # holds the GIL in long stretches, and beside the first reads after a restart it put
        # the first answer at 1.3-2.1 s after the spawn instead of 1.0-1.3 s (decision 586).
        try:
            while not self._stop.is_set():
                self.beat()
                try:
                    # With readers, writes reach the loop through a queue: poll it often.
                    self.step(block_ms=WRITES_POLL_MS if self.reads is not None else BLOCK_MS)
                    # Per-tenant passes run on the worker holding the tenant (decision 241).
                    done = self.debt.tick(self._writes_here)
                    self.scale.tick()
                    self.reconcile.tick()
                    self.quota.tick()
                    # A REM pass, or an audit's own debt actions, may retire memories.
                    self.automemory.touch(
                        d.split(":", 1)[1] for d in done if d.startswith(("rem:", "audit:"))
                    )
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
            self._end_resets()
            if self.reads is not None:
                self.reads.stop()
            try:
                self._commit()  # stored entries of a group in progress: flush and ack them now
            except (StoreUnavailable, redis.RedisError) as exc:
                log.warning("could not commit the last batches, they will be replayed: %s", exc)
            self.debt.close()  # a running index build: child killed, its shard back online
            self.scale.close()  # another worker leads strategy B at once
            if self.worker is not None:
                try:
                    self.worker.stop()  # leases released: the other workers take over now
                except (StoreUnavailable, redis.RedisError) as exc:
                    log.warning("could not release the leases (they expire by themselves): %s", exc)
            try:
                clear_heartbeat(self.r)
            except redis.RedisError:
                log.warning("could not clear the heartbeat (it expires by itself)")
            log.info("memory service stopped after %d ingests", self.processed)

    def ingesting(self) -> bool:
        """True while the loop stores an ingest batch embedded by the service's own model, and
        for :data:`INGEST_QUIET_S` after: the readers then yield it the GIL (decision 581).
        Never while the ingest embeds in a child process: its forward passes need no GIL of
        ours, and readers that stood by only left cores idle (decision 583, measured)."""
        if self._bulk_elsewhere():
            return False
        return time.monotonic() - self.last_ingest < INGEST_QUIET_S

    # --- one iteration --------------------------------------------------------------------
    def step(self, block_ms: int = BLOCK_MS) -> None:
        """Process pending entries (if a retry is due), then the batch read ahead or new ones."""
        self._poll_resets()  # a reset's switch, between two batches; its end
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
        streams: dict[Any, Any] = {redis_keys.INGEST_STREAM: ">"}
        if self.reads is None:
            streams = {redis_keys.RPC_STREAM: ">", **streams}
        self._serve_waiting_rpc()  # readers take the RPC stream and pass the writes on
        reply: Any = self.r.xreadgroup(GROUP, self.consumer, streams, count=BATCH, block=block_ms)
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
