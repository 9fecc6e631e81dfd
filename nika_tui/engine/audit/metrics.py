"""The audit's metrics read from Redis and the bus: compactions, bus growth, purges, pod TTFL,
the second-judge agreement and how many days growth stayed over its threshold.
"""

from __future__ import annotations

import itertools
import json
import random
from datetime import datetime, timedelta

from nika_tui.domain import debt_tables
from nika_tui.domain.debt import MetricReport, build_metric
from nika_tui.domain.sampling import (
    estimate_proportion,
    mean_interval,
    percentile_estimate,
)
from nika_tui.domain.verdicts import Fact, Verdict
from nika_tui.engine.audit.inventory import JUDGE_SAMPLE, RETIRED_KEPT, Inventory, parse_ts
from nika_tui.engine.context import EngineContext
from nika_tui.engine.judge_pairs import JudgedPair, recent_judged_pairs, second_judge
from nika_tui.errors import JudgeError
from nika_tui.services import redis_keys
from nika_tui.services.kernel_store import (
    pod_ttfl_samples,
)

TTFL_WINDOW = 100


def compaction_age(ctx: EngineContext, tenant_id: str, now: datetime) -> MetricReport:
    """Mean minutes between consecutive compactions of the last 24 hours."""
    since_ms = int((now - timedelta(days=1)).timestamp() * 1000)
    entries: list[tuple[str, dict[str, str]]] = ctx.redis.xrange(  # type: ignore[assignment]
        redis_keys.compactions(tenant_id), min=f"{since_ms}-0"
    )
    stamps: list[float] = []
    for entry_id, fields in entries:
        at = parse_ts(fields.get("at"))
        stamps.append(at if at is not None else int(entry_id.split("-")[0]) / 1000.0)
    stamps = sorted(s for s in stamps if s >= since_ms / 1000.0)
    gaps = [(b - a) / 60.0 for a, b in itertools.pairwise(stamps)]
    est = mean_interval(gaps)
    return build_metric(
        "context_compaction_age",
        est.value if gaps else None,
        sample_size=len(gaps),
        ci=(est.low, est.high) if len(gaps) > 1 else None,
        detail=f"{len(stamps)} compactions in the last 24 h",
    )


def bus_growth(ctx: EngineContext, tenant_id: str, now: datetime) -> MetricReport:
    """MB appended to the bus on the last complete day (today so far for a new tenant)."""
    bus = ctx.bus(tenant_id)
    today = now.date()
    yesterday = today - timedelta(days=1)
    older = [p for p in bus.files(archived=True) if p.name[:10] < today.isoformat()]
    if older:
        day, size = yesterday, bus.bytes_on(yesterday)
    else:
        day, size = today, bus.bytes_on(today)
    return build_metric(
        "audit_log_growth_rate",
        size / 1e6,
        sample_size=1,
        detail=f"{size} bytes on {day.isoformat()}",
    )


def purged_last_day(ctx: EngineContext, tenant_id: str, now: datetime) -> int:
    """``purge.removed`` lines on the bus in the last 24 hours."""
    bus = ctx.bus(tenant_id)
    since = (now - timedelta(days=1)).timestamp()
    n = 0
    for day in (now.date() - timedelta(days=1), now.date()):
        for line in bus.read(day):
            data = line.data
            if data is None or data.get("kind") != "purge.removed":
                continue
            at = parse_ts(data.get("at"))
            if at is not None and since <= at <= now.timestamp():
                n += 1
    return n


def ttfl_metric(ctx: EngineContext, tenant_id: str) -> MetricReport:
    """p95 of the last 100 pod_ttfl samples."""
    samples = pod_ttfl_samples(ctx.redis, tenant_id)[:TTFL_WINDOW]
    if not samples:
        return build_metric("pod_ttfl_p95", None, detail="no spawn recorded")
    est = percentile_estimate(samples, 95.0)
    return build_metric(
        "pod_ttfl_p95",
        est.value,
        sample_size=len(samples),
        ci=(est.low, est.high),
        detail=f"nearest-rank p95 of {len(samples)} samples",
    )


def judge_metric(
    ctx: EngineContext, tenant_id: str, inv: Inventory, rng: random.Random
) -> MetricReport:
    """Share of recently judged pairs where a second judge disagrees with the recorded verdict."""
    pairs: list[JudgedPair] = recent_judged_pairs(
        ctx, tenant_id, inv.retired_payloads(), RETIRED_KEPT
    )
    if len(pairs) > JUDGE_SAMPLE:
        pairs = rng.sample(pairs, JUDGE_SAMPLE)
    if not pairs:
        return build_metric("judge_disagreement", None, detail="no judged pair yet")
    judge = second_judge(ctx, tenant_id)
    facts = [
        (Fact(p.old_text, p.old_valid_from), Fact(p.new_text, p.new_valid_from)) for p in pairs
    ]
    many = getattr(judge, "judge_many", None)
    try:
        verdicts = [
            j.verdict
            for j in (many(facts) if callable(many) else [judge.judge(o, n) for o, n in facts])
        ]
    except JudgeError:
        verdicts = [Verdict.UNCERTAIN] * len(pairs)
    differing = [p for p, v in zip(pairs, verdicts, strict=True) if v is not p.verdict]
    differ = len(differing)
    firsts = ", ".join(sorted({p.judge or p.source for p in pairs}))
    shown = "; ".join(
        f"{p.old_id}→{p.new_id} {p.verdict.value} vs {v.value}"
        for p, v in zip(pairs, verdicts, strict=True)
        if v is not p.verdict
    )[:600]
    est = estimate_proportion(differ, len(pairs))
    return build_metric(
        "judge_disagreement",
        est.value,
        sample_size=len(pairs),
        ci=(est.low, est.high),
        detail=(
            f"{judge.name} vs recorded verdicts ({firsts}): {differ} of {len(pairs)} differ"
            + (f" [{shown}]" if shown else "")
        ),
    )


def growth_days_over(ctx: EngineContext, tenant_id: str, now: datetime, today_over: bool) -> int:
    """Consecutive days, ending today, on which an audit saw growth over its threshold."""
    since_ms = int((now - timedelta(days=debt_tables.GROWTH_SUSTAINED_DAYS + 1)).timestamp() * 1000)
    entries: list[tuple[str, dict[str, str]]] = ctx.redis.xrange(  # type: ignore[assignment]
        redis_keys.debt_history(tenant_id), min=f"{since_ms}-0"
    )
    over_days: set[str] = set()
    for _id, fields in entries:
        try:
            data = json.loads(fields.get("report", "{}"))
        except json.JSONDecodeError:
            continue
        for m in data.get("metrics", []):
            if m.get("name") == "qdrant_growth_rate" and m.get("status") == "alert":
                over_days.add(str(data.get("at", ""))[:10])
    if today_over:
        over_days.add(now.date().isoformat())
    days = 0
    day = now.date()
    while day.isoformat() in over_days:
        days += 1
        day -= timedelta(days=1)
    return days
