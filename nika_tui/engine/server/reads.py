"""Readers: threads of the memory service that answer read-only RPCs off the ingest path.

The loop is the single writer and stays so: a reader never writes a store. Readers consume
``RPC_STREAM`` (same group, consumer ``<service>:read<i>``) and answer the ops of
:data:`~nika_tui.domain.protocol.READ_ONLY_OPS` themselves, on the shards the loop has open;
every other op, and a read of a tenant another worker holds, goes to the loop through
:attr:`ReadPool.writes` (still pending in Redis, so a crash loses nothing acknowledged).
So a recall never waits for the ingest batch in hand, nor for the replay after a restart.

Why this is safe with Qdrant Edge: its shard methods take ``&self`` and lock inside (segment
holder ``RwLock``, one update lock), so a search from a reader thread runs beside the loop's
upsert and sees either the point or not, never a torn one; opening a shard is serialised by
:class:`~nika_tui.services.vectors.edge.EdgeVectorStore`'s own lock. The embedder is shared
through :class:`~nika_tui.engine.embed_gate.EmbedGate` (queries first, batched together).

Overload: a request whose deadline is less than :data:`SHED_S` away when a reader reaches it
is answered "busy, retry" (:class:`~nika_tui.errors.ServiceBusy`) instead of being worked on
for a caller who will have given up; a request past its deadline gets no reply (nobody waits).
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import redis

from nika_tui.domain.protocol import READ_ONLY_OPS, Op
from nika_tui.engine.context import EngineContext
from nika_tui.engine.server.liveness import HEARTBEAT_EVERY_S, write_heartbeat
from nika_tui.engine.server.rpc import (
    acknowledge,
    body_text,
    build_rpc_table,
    dispatch,
    error_body,
    rpc_tenant,
)
from nika_tui.engine.worker import Worker
from nika_tui.errors import ServiceBusy
from nika_tui.services import redis_keys

log = logging.getLogger("nika.service")

READERS = 3
"""Reader threads. They share one GIL with each other and with the loop, and every Redis round
trip or syscall of a recall gives it up and queues for it again: with eight, each recall waited
behind the others' and the ingest's torch ops behind all of them (measured, decision 580).
Three keep a Redis round trip, a search and the model busy at once."""
SHED_S = 0.15
"""A request with less time than this left is answered "busy, retry" at once."""
READ_COUNT = 8
"""Requests a reader takes per XREADGROUP (what is waiting, up to this). Those that need no
model are answered first; the new queries of the rest are then embedded in one call
(:meth:`ReadPool._warm`), the batching eight readers gave through the gate. A request waits
at most for the seven before it (~3 ms each when cached; decision 580)."""
REST_SHARE = 0.25
"""During an ingest, the reader rests this fraction of each batch's time after it."""
REST_MAX_S = 0.02
"""The longest such rest (a batch slowed by something else must not park reads)."""
STAND_BY_S = 0.05
"""How often a reader standing by during an ingest looks whether it ended."""
INGEST_QUIET_S = 2.0
"""The loop counts as ingesting until this long after it last stored an ingest batch."""
BLOCK_MS = 500
"""Longest wait of a reader for a request (it notices :meth:`ReadPool.stop` in between)."""

Entry = tuple[str, dict[str, str]]
"""An RPC stream entry: id and fields."""


class ReadPool:
    """Reader threads sharing the service's stores, with a query door on the embedder."""

    def __init__(
        self,
        ctx: EngineContext,
        query_embedder: Any,
        consumer: str,
        worker: Worker | None = None,
        size: int = READERS,
        shed_s: float = SHED_S,
        heartbeat: str | None = None,
        config_missing: Callable[[str], bool] | None = None,
        ingesting: Callable[[], bool] | None = None,
    ) -> None:
        """Args:
        ctx: the service's context (stores and Redis pool shared; caches shared).
        query_embedder: the embedder readers use (the gate's query door).
        consumer: the service's consumer name; readers are ``<consumer>:read<i>``.
        worker: lease-partitioned mode: a read of a tenant not held here goes to the loop.
        size: reader threads.
        shed_s: see :data:`SHED_S`.
        heartbeat: the service's ``started_at``: the first reader writes its heartbeat every
            :data:`HEARTBEAT_EVERY_S`, so the heartbeat never expires while reads are answered
            (the loop beats only between batches: a long batch or replay let it lapse, and every
            client then failed fast with "not running" — measured).
        config_missing: a joined worker's check that a tenant has no config here yet; such a
            read goes to the loop, which waits for the config (decision 511).
        ingesting: True while the loop ingests; then only the first reader takes requests
            (a second one too while a reader waits for the model), so the loop's torch ops and
            Python are not queued behind every reader's turn on the GIL (decision 581).
        """
        self.ctx = dataclasses.replace(ctx, embedder=query_embedder)
        self._door: Any = query_embedder
        """The gate's query door (``holds`` / ``warm``); another embedder has neither."""
        self.consumer = consumer
        self.worker = worker
        self.size = max(1, size)
        self.shed_s = shed_s
        self.heartbeat = heartbeat
        self.config_missing = config_missing
        self.ingesting = ingesting
        self.ops = build_rpc_table()
        self.writes: queue.SimpleQueue[Entry] = queue.SimpleQueue()
        """Entries for the loop: ops that write, reads of tenants held elsewhere."""
        self.answered = 0
        """Read requests answered (with a result or an error), for tests and stats."""
        self.answered_by: dict[str, int] = {}
        """The same, per reader (``<consumer>:read<i>``)."""
        self.standing_by: set[str] = set()
        """Readers stepping aside while the loop ingests (a reader blocked in its read when
        the ingest starts takes one more request first)."""
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._count_lock = threading.Lock()
        self._on_model = 0
        """Readers answering new queries (they may wait for the model behind the ingest)."""

    def start(self) -> None:
        """Start the reader threads (each on its own connection of the shared Redis pool)."""
        for i in range(self.size):
            thread = threading.Thread(
                target=self._run, args=(f"{self.consumer}:read{i}",), name=f"nika-read{i}",
                daemon=True,
            )  # fmt: skip
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        """Ask the readers to finish the request in hand, and wait for them."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=BLOCK_MS / 1000 + 30)
        self._threads = []

    def take_writes(self) -> list[Entry]:
        """The entries readers passed to the loop since the last call (never blocks)."""
        out: list[Entry] = []
        while True:
            try:
                out.append(self.writes.get_nowait())
            except queue.Empty:
                return out

    # --- one reader -----------------------------------------------------------------------
    def _run(self, name: str) -> None:
        r = redis.Redis(connection_pool=self.ctx.redis.connection_pool)
        # Each reader its own context (the stores and caches shared), so the writes a recall
        # defers (its query log) ride behind the reply this reader pushes (decision 579).
        later: list[Callable[[Any], None]] = []
        ctx = dataclasses.replace(self.ctx, defer=later.append)
        cursor = "0"  # first its own entries left pending by a killed process, then new ones
        first = name.endswith(":read0")
        beats = self.heartbeat if first else None
        last_beat = 0.0
        while not self._stop.is_set():
            try:
                if beats is not None and time.monotonic() - last_beat >= HEARTBEAT_EVERY_S:
                    write_heartbeat(r, beats)
                    last_beat = time.monotonic()
                if not first and cursor == ">" and self._stand_by():
                    self.standing_by.add(name)
                    self._stop.wait(STAND_BY_S)  # the first reader serves alone meanwhile
                    continue
                self.standing_by.discard(name)
                reply: Any = r.xreadgroup(
                    redis_keys.RPC_GROUP,
                    name,
                    {redis_keys.RPC_STREAM: cursor},
                    count=READ_COUNT,
                    block=None if cursor != ">" else BLOCK_MS,
                )
                entries: list[Entry] = reply[0][1] if reply else []
                if cursor != ">":
                    if not entries:
                        cursor = ">"
                        continue
                    cursor = entries[-1][0]
                started = time.monotonic()
                # Requests that need no model first: a batch's new queries wait for the model
                # (behind an ingest micro-batch, maybe), the cached ones behind them must not.
                ready, new, texts = self._split(entries)
                for entry_id, fields in ready:
                    self._handle(ctx, r, entry_id, fields or {}, later, name)
                if new:
                    self._waiting_for_model(+1)  # meanwhile a reader standing by serves
                    try:
                        if len(texts) > 1:
                            self._warm(texts)
                        for entry_id, fields in new:
                            self._handle(ctx, r, entry_id, fields or {}, later, name)
                    finally:
                        self._waiting_for_model(-1)
                if entries and self.ingesting is not None and self.ingesting():
                    # Step aside for a share of the time the batch took: the loop gets the GIL
                    # for its torch ops and Python in between (decision 581).
                    self._stop.wait(min(REST_MAX_S, (time.monotonic() - started) * REST_SHARE))
            except redis.ResponseError as exc:
                if "NOGROUP" not in str(exc):
                    raise
                self._stop.wait(1.0)  # the loop recreates the groups
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                log.warning("reader %s: redis unavailable, retrying: %s", name, exc)
                self._stop.wait(1.0)

    def _stand_by(self) -> bool:
        """True while the loop ingests and no reader waits for the model (decision 581): a
        new query waits behind an ingest micro-batch, and the cached requests that came in
        meanwhile must not wait behind it."""
        if self.ingesting is None or not self.ingesting():
            return False
        with self._count_lock:
            return self._on_model == 0

    def _waiting_for_model(self, delta: int) -> None:
        with self._count_lock:
            self._on_model += delta

    def _split(self, entries: list[Entry]) -> tuple[list[Entry], list[Entry], list[str]]:
        """The entries that need no model, those whose recall query is not embedded yet, and
        those queries."""
        holds = getattr(self._door, "holds", None)
        ready: list[Entry] = []
        new: list[Entry] = []
        texts: list[str] = []
        for entry in entries:
            query = _recall_query(entry[1] or {})
            if query is None or holds is None or holds(query):
                ready.append(entry)
            else:
                new.append(entry)
                texts.append(query)
        return ready, new, texts

    def _warm(self, texts: list[str]) -> None:
        """Embed a batch's new queries in one call (the gate keeps the vectors, so each recall
        finds its own cached). A failure here is left to each recall."""
        try:
            self._door.warm(texts)
        except Exception:
            # Each recall embeds its own query again and reports the error to its caller.
            log.exception("embedding a batch of queries failed")

    def _handle(
        self,
        ctx: EngineContext,
        r: redis.Redis,
        entry_id: str,
        fields: Mapping[str, str],
        later: list[Callable[[Any], None]],
        name: str,
    ) -> None:
        op = fields.get("op", "")
        if op not in READ_ONLY_OPS or not self._ours(fields):
            self.writes.put((entry_id, dict(fields)))  # pending under our name until the loop acks
            return
        request_id = fields.get("id", "")
        try:
            deadline = float(fields.get("deadline", "0"))
        except ValueError:
            deadline = 0.0
        left = deadline - time.time()
        reply: dict[str, Any] | None = None
        if request_id and left > 0:
            if left < self.shed_s:
                busy = ServiceBusy(f"the memory service is busy: {op} not started, retry")
                reply = {"ok": False, **error_body(busy)}
            else:
                holds = self.worker.holds_now if self.worker is not None else None
                reply = dispatch(ctx, self.ops, op, fields.get("body", "{}"), holds)
        after, later[:] = list(later), []
        acknowledge(r, entry_id, request_id, reply, after)
        with self._count_lock:
            self.answered += 1
            self.answered_by[name] = self.answered_by.get(name, 0) + 1

    def _ours(self, fields: Mapping[str, str]) -> bool:
        """True unless another worker holds the tenant (the loop hands such reads off)."""
        if self.worker is None:
            return True
        tenant = rpc_tenant(fields)
        if tenant is None:
            return True
        # A tenant whose config has not reached this joined worker: the loop keeps it until
        # the config comes (decision 511).
        return self.worker.holds_now(tenant) and not (
            self.config_missing is not None and self.config_missing(tenant)
        )


def _recall_query(fields: Mapping[str, str]) -> str | None:
    """The query text of a recall entry (None for another op or a body that does not parse)."""
    if fields.get("op") != Op.RECALL.value:
        return None
    return body_text(fields, "query")
