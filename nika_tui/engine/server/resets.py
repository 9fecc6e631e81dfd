"""A tenant's fresh start beside the other tenants' writes (issue 22, decision 505).

A reset (``engine/reset.py``) ran in the loop and held it: no tenant's memory was stored for
10 min at 50,000 memories (decision 439). Now the service runs it like this:

- the loop *holds* the tenant first (after committing what it stored of it): its ingest entries
  stay pending in the stream (delivered, never acknowledged, as a parked tenant's), its write
  RPCs are answered "busy, retry after the reset", its audits, REM passes and index builds wait;
  every other tenant's ingest and writes go on;
- the heavy stages (snapshot, compress, publish, build, the backup check) run on a thread of
  their own: they only read the tenant's live shards, which nothing writes while it is held;
- the switch (flush and close the tenant's shards, replace ``GENERATION``) is handed back to the
  loop and runs there between two batches, where no group commit is open on anything;
- when the thread ends, the loop answers the RPC (or the audit that started it), releases the
  tenant and replays its pending entries into the new generation.

One reset at a time per service: a second one is refused ("busy") until the first ends. A
``kill -9`` anywhere leaves what the reset's own order leaves (the pointer is written last): the
old generation or the new one; the held entries are still pending and replayed at the restart.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nika_tui.engine.context import EngineContext
from nika_tui.engine.reset import read_journal, reset
from nika_tui.errors import NikaError, ShardBusy

log = logging.getLogger("nika.service")

Done = Callable[[dict[str, Any] | NikaError], None]
"""Called on the loop with the reset's result, or its error."""


@dataclass
class _Running:
    tenant_id: str
    done: Done
    thread: threading.Thread | None = None
    outcome: list[dict[str, Any] | NikaError] = field(default_factory=list)


class TenantResets:
    """The service's running reset: which tenant is held, the thread, the switch hand-over."""

    def __init__(self, ctx: EngineContext) -> None:
        self._ctx = ctx
        self._running: _Running | None = None
        self._lock = threading.Lock()
        self._steps: queue.Queue[tuple[Callable[[], None], Future[None]]] = queue.Queue()
        self._wake = threading.Event()

    def holds(self, tenant_id: str) -> bool:
        """True while ``tenant_id``'s reset runs: its writes wait (any thread may ask)."""
        with self._lock:
            return self._running is not None and self._running.tenant_id == tenant_id

    def busy(self, tenant_id: str) -> ShardBusy:
        """The answer to a write of ``tenant_id`` while it is held."""
        stage = read_journal(tenant_id, self._ctx.settings.roots).get("stage", "started")
        return ShardBusy(
            f"memory writes of {tenant_id} paused: reset running (stage {stage})",
            "retry after the reset ends (the dashboard's status bar shows it while it runs); "
            "other tenants' writes are not affected",
        )

    def start(self, tenant_id: str, repo: Path | None, done: Done) -> None:
        """Hold ``tenant_id`` and start its reset on a thread (call on the loop, after the
        loop committed what it stored; ``done`` is called on the loop by :meth:`poll`).

        Raises:
            ShardBusy: a reset (of this tenant or another) is already running here.
        """
        with self._lock:
            if self._running is not None:
                raise ShardBusy(
                    f"a reset of {self._running.tenant_id} is running in the memory service",
                    "retry after it ends (one reset at a time)",
                )
            run = _Running(tenant_id, done)
            self._running = run
        run.thread = threading.Thread(
            target=self._run, args=(run, repo), name=f"reset-{tenant_id}", daemon=True
        )
        run.thread.start()

    def _run(self, run: _Running, repo: Path | None) -> None:
        try:
            result: dict[str, Any] | NikaError = reset(
                self._ctx, run.tenant_id, repo, self._on_loop
            )
        except NikaError as exc:
            result = exc
        except Exception as exc:  # the thread's edge: the loop reports it as the reset's error
            log.exception("reset of %s failed", run.tenant_id)
            result = NikaError(f"reset of {run.tenant_id} failed: {exc!r}", "see the service log")
        run.outcome.append(result)
        self._wake.set()

    def _on_loop(self, step: Callable[[], None]) -> None:
        """Run ``step`` on the loop (its next :meth:`poll`) and wait for it; errors propagate."""
        future: Future[None] = Future()
        self._steps.put((step, future))
        self._wake.set()
        future.result()

    def poll(self) -> bool:
        """On the loop: run the steps the reset handed over, then finish an ended reset
        (``done`` called, the tenant released). Returns True when a reset ended."""
        self._wake.clear()
        while True:
            try:
                step, future = self._steps.get_nowait()
            except queue.Empty:
                break
            try:
                step()
                future.set_result(None)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the reset's thread
                future.set_exception(exc)
        run = self._running
        if run is None or not run.outcome:
            return False
        if run.thread is not None:
            run.thread.join()
        with self._lock:
            self._running = None
        run.done(run.outcome[0])
        return True

    def running(self) -> bool:
        """True while a reset's thread runs."""
        return self._running is not None

    def wait(self, timeout_s: float) -> None:
        """Block until the reset hands a step over or ends (at most ``timeout_s``)."""
        self._wake.wait(timeout_s)
