"""Scheduling of the debt audit and the REM pass inside the memory service.

The service calls :meth:`DebtScheduler.tick` on every loop iteration; the scheduler looks at
most once a minute (``check_every_s``) and then:

- audits every tenant whose last audit (``debt_history``) is older than
  ``NIKA_AUDIT_INTERVAL_S`` (default 6 h; seed: « toutes les 6 heures »);
- for every tenant whose kernels have all been idle for ``NIKA_REM_IDLE_S`` (default 30 min)
  and whose last REM pass is older than ``NIKA_REM_INTERVAL_S`` (default 20 h): runs the pass
  if ``auto_actions.rem`` is ``autonomous``, queues one ``rem.run`` confirmation if it is
  ``escalate``, does nothing if ``off``.

Every tick also runs :class:`~nika_tui.engine.index_maintenance.IndexMaintainer` (HNSW builds of
idle tenants' Edge shards in a child process) and the periodic recall tuning
(:class:`~nika_tui.tuning.scheduler.TuneScheduler`). With workers, every pass covers only the
tenants this worker holds (``owns``, decision 241). A failing tenant is logged and skipped:
maintenance never stops the single writer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from nika_tui.domain.tenant import AutoMode
from nika_tui.engine.audit.history import due_tenants
from nika_tui.engine.context import EngineContext
from nika_tui.engine.debt.run import run_audit
from nika_tui.engine.index_maintenance import IndexMaintainer
from nika_tui.engine.rem.run import run_rem
from nika_tui.engine.rem.schedule import rem_due
from nika_tui.errors import NikaError
from nika_tui.services.config_store import list_tenant_ids
from nika_tui.services.kernel_store import pending_confirmation, queue_confirmation

log = logging.getLogger("nika.debt")

REM_CONFIRMATION = "rem.run"


class DebtScheduler:
    """Runs due audits and REM passes from the service loop."""

    def __init__(
        self,
        ctx: EngineContext,
        check_every_s: float = 60.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ctx = ctx
        self.check_every_s = check_every_s
        self._monotonic = monotonic
        # The first look comes one interval after start: a (re)started service first serves
        # the writers and readers that waited for it.
        self._next = monotonic() + check_every_s
        # HNSW builds of idle tenants' Edge shards, in a child process (index_maintenance.py).
        self.index = IndexMaintainer(ctx, check_every_s=check_every_s, monotonic=monotonic)
        from nika_tui.tuning.scheduler import TuneScheduler

        # Recall tuning, once a day per tenant with new labels, per auto_actions.tune (#20).
        self.tuning = TuneScheduler(ctx, monotonic=monotonic)

    def tick(self, owns: Callable[[str], bool] | None = None) -> list[str]:
        """Do what is due (at most one check per interval); return what was done.

        Args:
            owns: True for the tenants this worker holds the lease of (a tenant's audit, REM
                pass, index build and tuning write its state, so only its writer runs them);
                ``None``: every tenant (a service without workers).
        """
        mine: Callable[[str], bool] = owns or (lambda _tenant: True)
        # Every tick: a finished index build is brought online as soon as the loop sees it.
        done: list[str] = self.index.tick(mine)
        done += self.tuning.tick(mine)  # its own pace (every 10 min at most)
        now = self._monotonic()
        if now < self._next:
            return done
        self._next = now + self.check_every_s
        for tenant_id in [t for t in due_tenants(self.ctx) if mine(t)]:
            try:
                run_audit(self.ctx, tenant_id)
                done.append(f"audit:{tenant_id}")
            except NikaError as exc:
                log.warning("audit of %s failed: %s", tenant_id, exc)
        for tenant_id in list_tenant_ids(self.ctx.settings.roots):
            if not mine(tenant_id):
                continue
            try:
                done += self._rem(tenant_id)
            except NikaError as exc:
                log.warning("REM pass of %s failed: %s", tenant_id, exc)
        return done

    def close(self) -> None:
        """On service stop: stop a running index build and bring its shard online."""
        self.index.close()

    def _rem(self, tenant_id: str) -> list[str]:
        if not rem_due(self.ctx, tenant_id):
            return []
        mode = self.ctx.tenant(tenant_id).auto_actions.rem
        if mode is AutoMode.AUTONOMOUS:
            run_rem(self.ctx, tenant_id, trigger="idle")
            return [f"rem:{tenant_id}"]
        if mode is AutoMode.ESCALATE and not pending_confirmation(
            self.ctx.redis, tenant_id, REM_CONFIRMATION
        ):
            item = queue_confirmation(
                self.ctx.redis,
                tenant_id,
                REM_CONFIRMATION,
                "run the REM consolidation pass",
                "the tenant's kernels are idle: merge duplicates, re-judge contradictions, "
                "retire obsolete facts, promote repeated episodes",
                self.ctx.clock(),
            )
            self.ctx.bus(tenant_id).append(
                "confirmation.requested",
                {"id": item["id"], "kind": REM_CONFIRMATION},
                now=self.ctx.clock(),
            )
            return [f"rem-confirmation:{tenant_id}"]
        return []
