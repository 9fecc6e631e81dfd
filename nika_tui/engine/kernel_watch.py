"""The kernel watcher: the periodic half of kernel state, run inside the memory service.

Hooks push state as it happens; this loop covers what hooks cannot see. Every ``interval_s``
it polls every kernel once (heartbeat while the tmux session lives, pane fallback when no hook
spoke recently, exit detection) and applies the 61% compaction policy to kernels whose working
memory is at or past the line (the policy itself decides what the tenant's auto-compact mode
allows, and waits for an idle kernel).

It runs on its own thread so that a slow tmux never delays an ingest acknowledgement, and it
uses its own Redis connection (redis-py clients are not shared across threads here).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

import redis

from nika_tui.domain.compaction import COMPACT_THRESHOLD_PERCENT, CompactionAction
from nika_tui.domain.kernel_state import KernelState
from nika_tui.engine.kernels.manager import KernelManager
from nika_tui.errors import NikaError
from nika_tui.services import wm_store
from nika_tui.settings import Settings

log = logging.getLogger("nika.kernels")

ACTED = (CompactionAction.SEND_COMPACT, CompactionAction.REQUEST_CONFIRMATION)
LIVE = {KernelState.STARTING, KernelState.WORKING, KernelState.WAITING_INPUT, KernelState.IDLE}


class KernelWatcher:
    """Polls kernels and applies the compaction policy, until stopped."""

    def __init__(
        self,
        settings: Settings,
        child_env: Mapping[str, str] | None = None,
        interval_s: float = 2.0,
    ) -> None:
        """Args:
        settings: The process's settings (roots, quota cgroups), built once at its entry.
        child_env: What a kernel the watcher restarts starts from (``os.environ`` when None): a raw
            environment on purpose, for ``PATH``, ``HOME`` and the agent CLIs' own variables;
            ``tmux_env`` and ``kernel_launch`` keep secrets out of what reaches tmux.
        interval_s: Seconds between two ticks.
        """
        self.manager = KernelManager(settings, child_env=child_env)
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> list[str]:
        """Poll once; return the tenants whose compaction policy acted."""
        acted: list[str] = []
        statuses = self.manager.list()
        live = [s.tenant_id for s in statuses if s.state in LIVE]
        memories = wm_store.read_many(self.manager.redis, live, history_limit=1)
        for tenant_id in live:
            wm = memories.get(tenant_id)
            if wm is None:
                continue
            # Each agent's own fill (one context per agent window); a kernel whose hooks
            # predate per-agent fills has the tenant's latest reading, for its first window.
            own = wm_store.read_agent_fills(self.manager.redis, tenant_id)
            fills: dict[str | None, float] = dict(own.items()) if own else {None: wm.fill_percent}
            for agent, fill in fills.items():
                if fill < COMPACT_THRESHOLD_PERCENT:
                    continue
                try:
                    decision = self.manager.apply_compaction_policy(tenant_id, fill, agent)
                except NikaError as exc:  # e.g. a fill left by an agent no longer in the kernel
                    log.warning("compaction policy for %s %s: %s", tenant_id, agent, exc)
                    continue
                if decision.action in ACTED and tenant_id not in acted:
                    acted.append(tenant_id)
        return acted

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except (NikaError, redis.RedisError, OSError) as exc:
                # Watching is best effort: the next tick tries again; ingest is unaffected.
                log.warning("kernel watch failed: %s", exc)
            self._stop.wait(self.interval_s)

    def start(self) -> None:
        """Start the daemon thread."""
        self._thread = threading.Thread(target=self._run, name="kernel-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to finish and wait for it briefly."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
