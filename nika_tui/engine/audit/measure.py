"""Every metric of one tenant measured in one pass (reads only; writes nothing)."""

from __future__ import annotations

import random
import time

from nika_tui.domain import debt, debt_tables
from nika_tui.domain.debt import AuditReport, build_metric
from nika_tui.domain.sampling import (
    estimate_proportion,
)
from nika_tui.domain.strategies import available_strategies, recommendation
from nika_tui.engine.audit.inventory import Inventory, duplicate_flags, inventory
from nika_tui.engine.audit.metrics import (
    bus_growth,
    compaction_age,
    growth_days_over,
    judge_metric,
    purged_last_day,
    ttfl_metric,
)
from nika_tui.engine.audit.queries import query_metrics
from nika_tui.engine.context import EngineContext

DUPLICATE_SAMPLE = 1000
"""Points sampled for duplicate_rate: ±1.4 points at p = 5 % (95 % Wilson)."""


def measure(
    ctx: EngineContext,
    tenant_id: str,
    *,
    sample_size: int = DUPLICATE_SAMPLE,
    seed: int | None = None,
) -> tuple[AuditReport, Inventory]:
    """Compute every metric for one tenant (reads only; writes nothing).

    Args:
        ctx: Engine context.
        tenant_id: The tenant.
        sample_size: Points sampled for duplicate_rate.
        seed: Random seed (None: fresh randomness each run).

    Returns:
        The report and the inventory it came from.
    """
    started = time.monotonic()
    config = ctx.tenant(tenant_id)
    now = ctx.clock()
    rng = random.Random(seed)
    inv = inventory(ctx.vectors, tenant_id, now, sample_size, rng)
    flags = duplicate_flags(ctx.vectors, tenant_id, inv.sample)
    dup = estimate_proportion(sum(flags), len(flags), population=inv.current)
    growth = float(inv.asserted_24h - purged_last_day(ctx, tenant_id, now))
    offtopic, leakage, staleness = query_metrics(ctx, tenant_id, now)
    metrics = [
        offtopic,
        build_metric(
            "qdrant_growth_rate",
            growth,
            sample_size=inv.total,
            detail=f"{inv.asserted_24h} asserted - {inv.asserted_24h - int(growth)} purged",
        ),
        compaction_age(ctx, tenant_id, now),
        build_metric(
            "duplicate_rate",
            dup.value if flags else None,
            sample_size=len(flags),
            ci=(dup.low, dup.high) if flags else None,
            detail=f"{sum(flags)} of {len(flags)} sampled current points (of {inv.current})",
        ),
        staleness,
        leakage,
        judge_metric(ctx, tenant_id, inv, rng),
        bus_growth(ctx, tenant_id, now),
        ttfl_metric(ctx, tenant_id),
    ]
    growth_alert = metrics[1].status is debt_tables.MetricStatus.ALERT
    names = [s.value for s in available_strategies(config)]
    report = AuditReport(
        tenant_id=tenant_id,
        at=now,
        metrics=metrics,
        critical_reasons=debt.critical_reasons(metrics),
        strategies=debt.suggest_strategies(
            metrics,
            debt.strategy_letters(names),
            growth_days_over(ctx, tenant_id, now, growth_alert),
            recommendation(config) or debt_tables.NO_STRATEGY_ADVICE,
        ),
    )
    report.critical = bool(report.critical_reasons)
    report.duration_s = round(time.monotonic() - started, 3)
    return report, inv
