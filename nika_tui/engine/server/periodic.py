"""The periodic jobs the service loop ticks between batches, built in one place.

Each job keeps its own clock and lease; the loop only calls their ``tick`` and ``close``. Built
here so the loop's module holds the loop, not the list of everything that runs beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from nika_tui.engine.context import EngineContext
from nika_tui.engine.tenant_configs import TenantConfigSync
from nika_tui.engine.worker import Worker

if TYPE_CHECKING:
    from nika_tui.automemory.runner import AutoMemoryScheduler
    from nika_tui.engine.debt.schedule import DebtScheduler
    from nika_tui.quota.tokens import QuotaWatcher
    from nika_tui.scale.reconcile_loop import ReconcileScheduler
    from nika_tui.scale.scheduler import ScaleScheduler


@dataclass
class PeriodicJobs:
    """What the service runs beside ingest and reads."""

    debt: DebtScheduler
    scale: ScaleScheduler
    reconcile: ReconcileScheduler
    quota: QuotaWatcher
    automemory: AutoMemoryScheduler
    configs: TenantConfigSync


def periodic_jobs(ctx: EngineContext, consumer: str, worker: Worker | None) -> PeriodicJobs:
    """The jobs of a service whose consumer name is ``consumer`` (``worker``: None when alone)."""
    # Imported here: each pulls its own feature package, which the loop's import should not.
    from nika_tui.automemory.runner import AutoMemoryScheduler
    from nika_tui.engine.debt.schedule import DebtScheduler
    from nika_tui.quota.tokens import QuotaWatcher
    from nika_tui.scale.actions import default_factory
    from nika_tui.scale.reconcile_loop import ReconcileScheduler
    from nika_tui.scale.scheduler import ScaleScheduler

    every = ctx.settings.scale_reconcile_s
    return PeriodicJobs(
        # Debt audit every 6 h and the REM pass when kernels sleep (issue 5).
        debt=DebtScheduler(ctx),
        # Strategy B (issue 18): host samples once a minute, scale plans per
        # auto_actions.scale, on the one worker that holds the scale leadership (decision 380).
        scale=ScaleScheduler(
            ctx.redis,
            ctx.settings,
            # The providers' keys: read where they are sent.
            factory=default_factory(ctx.secrets_env),
            worker_id=consumer,
            lease_ttl_s=worker.ttl_s if worker is not None else 15.0,
        ),
        # No orphan instance: a reconcile pass on the lease holder (decision 385).
        reconcile=ReconcileScheduler(
            ctx.redis,
            consumer,
            ctx.settings.roots,
            ctx.secrets_env,
            every_s=every,
            first_s=min(60.0, every),
        ),
        # Tokens per day (issue 18): warn at 80%, pause or ask at 100%; beside the kernels only.
        quota=QuotaWatcher(
            ctx.redis, ctx.settings.roots, kernels_here=worker is None or worker.primary
        ),
        # The agents' native auto-memory, synced after ingest (debounced) and after REM (#20).
        automemory=AutoMemoryScheduler.for_context(ctx),
        # Tenant configs through Redis: the primary publishes, a joined worker fetches (#18).
        configs=TenantConfigSync(ctx.redis, ctx.settings.roots, worker is None or worker.primary),
    )
