"""Index maintenance: build the HNSW index of idle tenants' shards without freezing the service.

Qdrant Edge runs no background optimizer, and ``EdgeShard.optimize()`` holds the GIL for
~10 s per 12-15k points, longer than the service's heartbeat TTL. So the service never
optimises in-process: :class:`IndexMaintainer` takes one shard offline (in the loop thread),
the child ``python -m nika_tui.services.vectors.optimize_shard`` runs, a background thread
waits on its pipe (the GIL is free while it waits) and clears the shard's offline mark as soon as
it exits, and the next :meth:`IndexMaintainer.tick` reports the outcome (log + one
``index.optimized`` / ``index.optimize_failed`` bus message for the tenant).

Rules:

- at most one shard at a time;
- only shards of tenants whose kernels have all been idle for ``NIKA_OPTIMIZE_IDLE_S``
  (default 300 s; ``kernels_idle`` of the REM pass): their agents are not reading;
- only shards with ``pending_index ≥ NIKA_OPTIMIZE_MIN_PENDING`` points; the default is the
  number of points Qdrant's indexing threshold (10,000 KB of dense vectors) holds — 6,667 at
  384-d — because Qdrant leaves a smaller appendable segment unindexed: an optimise below it
  does nothing (measured: 6,600 points → no-op, 6,750 → indexed);
- a run that optimised nothing is not retried until the shard has ``min_pending`` more points;
  a failed or timed-out run (``NIKA_OPTIMIZE_TIMEOUT_S``, default 1800 s) backs the shard off
  for ``NIKA_OPTIMIZE_BACKOFF_S`` (default 1 h);
- candidates are looked for at most every ``check_every_s``; a check opens at most one shard
  that the service has not opened yet (opening costs a segment load; 40 at once would stall
  the loop past its heartbeat).

Only for :class:`EdgeVectorStore`: a Qdrant server optimises its collections itself.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from nika_tui.domain.memory import Layer
from nika_tui.engine.context import EngineContext
from nika_tui.engine.rem.schedule import kernels_idle
from nika_tui.errors import NikaError, StoreUnavailable
from nika_tui.services.vectors.edge import EdgeVectorStore
from nika_tui.services.vectors.optimizer import OptimizeResult, ShardOptimizer

log = logging.getLogger("nika.index")

QDRANT_INDEXING_THRESHOLD_KB = 10_000
"""Qdrant's default ``indexing_threshold``: appendable segments below it stay unindexed."""

ShardKey = tuple[str, Layer]


def default_min_pending(dimension: int) -> int:
    """Points whose dense vectors fill Qdrant's indexing threshold (6,667 at 384-d)."""
    return math.ceil(QDRANT_INDEXING_THRESHOLD_KB * 1024 / (4 * dimension))


@dataclass
class _Run:
    """One shard being optimised: the child and the thread waiting for it."""

    key: ShardKey
    pending: int
    child: ShardOptimizer
    thread: threading.Thread | None = None
    result: OptimizeResult | None = None
    error: NikaError | None = None
    done: threading.Event = field(default_factory=threading.Event)


class IndexMaintainer:
    """Optimises idle tenants' Qdrant Edge shards one at a time, from the service loop."""

    def __init__(
        self,
        ctx: EngineContext,
        check_every_s: float = 60.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """Args:
        ctx: the service's engine context (its ``vectors`` must be the single writer's).
        check_every_s: seconds between two looks for a candidate shard.
        monotonic: clock for the check interval and back-offs (tests pass their own).
        """
        self.ctx = ctx
        self.store = ctx.vectors if isinstance(ctx.vectors, EdgeVectorStore) else None
        settings = ctx.settings
        self.idle_s = settings.optimize_idle_s
        dim = self.store.dimension if self.store is not None else 384
        pending = settings.optimize_min_pending
        self.min_pending = int(default_min_pending(dim) if pending is None else pending)
        self.timeout_s = settings.optimize_timeout_s
        self.backoff_s = settings.optimize_backoff_s
        self.check_every_s = check_every_s
        self._monotonic = monotonic
        # Like the debt scheduler: a (re)started service first serves who waited for it.
        self._next = monotonic() + check_every_s
        self._run: _Run | None = None
        self._retry_at: dict[ShardKey, float] = {}
        self._noop_floor: dict[ShardKey, int] = {}
        self._unopened_turn = 0

    @property
    def enabled(self) -> bool:
        """False when the store is not Qdrant Edge (nothing to maintain)."""
        return self.store is not None

    @property
    def running(self) -> ShardKey | None:
        """The shard being optimised, if any."""
        return self._run.key if self._run is not None else None

    @property
    def child_pid(self) -> int | None:
        """Process id of the running optimiser child, if any."""
        return self._run.child.pid if self._run is not None else None

    def tick(self, owns: Callable[[str], bool] | None = None) -> list[str]:
        """Finish a completed run, or start one when due; never waits for a child.

        Args:
            owns: True for the tenants this worker holds (``None``: all); the others' shards
                here are old copies nobody serves from.

        Returns:
            What was done (``index-started:T/L``, ``index-optimized:T/L``, ``index-failed:T/L``).
        """
        if self.store is None:
            return []
        done: list[str] = []
        if self._run is not None:
            if not self._run.done.is_set():
                return []
            done.append(self._finish(self._run))
        now = self._monotonic()
        if now < self._next:
            return done
        self._next = now + self.check_every_s
        try:
            candidate = self._candidate(now, owns or (lambda _tenant: True))
            if candidate is not None:
                self._start(*candidate)
                done.append(f"index-started:{candidate[0][0]}/{candidate[0][1].value}")
        except NikaError as exc:
            log.warning("index maintenance check failed: %s", exc)
        return done

    def close(self, timeout_s: float = 5.0) -> None:
        """On service stop: kill a running child (crash-safe) and bring its shard online."""
        run = self._run
        if run is None:
            return
        run.child.kill()
        if run.thread is not None:
            run.thread.join(timeout_s)
        self._finish(run)

    # --- internals ----------------------------------------------------------------------------
    def _candidate(self, now: float, owns: Callable[[str], bool]) -> tuple[ShardKey, int] | None:
        """The idle tenant's shard with the most pending points at or above the threshold."""
        store = self.store
        assert store is not None
        best: tuple[ShardKey, int] | None = None
        unopened: list[ShardKey] = []
        for tenant_id in store.tenants():
            if not owns(tenant_id) or not kernels_idle(self.ctx, tenant_id, self.idle_s):
                continue
            for layer in Layer:
                key = (tenant_id, layer)
                if self._retry_at.get(key, 0.0) > now:
                    continue
                if not (store.root / tenant_id / layer.value / "edge_config.json").exists():
                    continue
                if not store.is_open(tenant_id, layer):
                    unopened.append(key)
                    continue
                best = self._better(best, key, store.pending_index(tenant_id, layer))
        if unopened:
            # One new shard per check, in turn, so that opening them stays cheap.
            key = unopened[self._unopened_turn % len(unopened)]
            self._unopened_turn += 1
            best = self._better(best, key, store.pending_index(*key))
        return best

    def _better(
        self, best: tuple[ShardKey, int] | None, key: ShardKey, pending: int
    ) -> tuple[ShardKey, int] | None:
        floor = max(self.min_pending, self._noop_floor.get(key, 0))
        if pending < floor or (best is not None and best[1] >= pending):
            return best
        return key, pending

    def _start(self, key: ShardKey, pending: int) -> None:
        store = self.store
        assert store is not None
        tenant_id, layer = key
        if store.take_offline(tenant_id, layer) is None:
            return
        try:
            child = ShardOptimizer.start(store.root, tenant_id, layer, store.dimension)
        except StoreUnavailable:
            store.bring_online(tenant_id, layer)
            self._retry_at[key] = self._monotonic() + self.backoff_s
            raise
        run = _Run(key, pending, child)
        run.thread = threading.Thread(
            target=self._wait, args=(run,), name=f"optimize-{tenant_id}-{layer.value}", daemon=True
        )
        self._run = run
        run.thread.start()
        log.info(
            "optimising %s/%s in child %d (%d points pending)",
            tenant_id,
            layer.value,
            child.pid,
            pending,
        )

    def _wait(self, run: _Run) -> None:
        """Background thread: wait for the child, then clear the shard's offline mark.

        Clearing the mark here, not only in the next tick, matters: the service loop skips its
        maintenance tick while an ingest batch keeps failing, and a batch that writes to this
        shard fails until the mark is gone. ``bring_online`` only edits a set under the store's
        lock; the shard itself is reopened by the loop thread on its next use.
        """
        try:
            run.result = run.child.wait(self.timeout_s)
        except NikaError as exc:
            run.error = exc
        finally:
            assert self.store is not None
            self.store.bring_online(*run.key)
            run.done.set()

    def _finish(self, run: _Run) -> str:
        """In the loop thread: bring the shard online, report, remember back-offs."""
        store = self.store
        assert store is not None
        self._run = None
        tenant_id, layer = run.key
        store.bring_online(tenant_id, layer)
        where = f"{tenant_id}/{layer.value}"
        if run.result is not None:
            result = run.result
            self._retry_at.pop(run.key, None)
            if result.optimized:
                self._noop_floor.pop(run.key, None)
            else:
                self._noop_floor[run.key] = run.pending + self.min_pending
            log.info(
                "optimised %s: %s in %.1fs (%d points)",
                where,
                "indexed" if result.optimized else "nothing to do",
                result.seconds,
                result.points,
            )
            self._bus(
                tenant_id,
                "index.optimized",
                {
                    "layer": layer.value,
                    "optimized": result.optimized,
                    "seconds": result.seconds,
                    "points": result.points,
                    "pending_before": run.pending,
                },
            )
            return f"index-optimized:{where}"
        error = run.error or StoreUnavailable("the optimiser was stopped")
        self._retry_at[run.key] = self._monotonic() + self.backoff_s
        log.warning("optimising %s failed (next try in %.0fs): %s", where, self.backoff_s, error)
        self._bus(
            tenant_id,
            "index.optimize_failed",
            {"layer": layer.value, "error": error.message, "retry_in_s": self.backoff_s},
        )
        return f"index-failed:{where}"

    def _bus(self, tenant_id: str, kind: str, body: dict[str, object]) -> None:
        try:
            self.ctx.bus(tenant_id).append(kind, body, now=self.ctx.clock())
        except (NikaError, OSError) as exc:
            log.warning("could not log %s on the bus of %s: %s", kind, tenant_id, exc)
