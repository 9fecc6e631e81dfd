"""The memory-debt audit: every metric of seed 1 measured from the real stores, per tenant.

Sources: the vector store (one inventory scroll per layer + Qdrant neighbour searches on a
random sample), the ``query_log`` stream (recent recalls), the bus files (sizes, purges), the
``pod_ttfl`` list, the ``compactions`` stream, and a second judge run on recently judged pairs.
Every run is appended to the ``debt_history`` stream (dashboard sparklines), logged on the bus
(``debt.audit``), and its actions are decided by the tenant's auto-actions
(:func:`nika_tui.domain.debt.decide_actions`). Past the critical level a review request goes on
the bus and bulk ingestion is paused (``ingest_paused`` key, see ``is_bulk_write``).

Cost at 413,000 points: one payload scroll (linear, no vectors) and ``sample_size`` dense
searches; nothing quadratic.
"""

from __future__ import annotations

import heapq
import itertools
import json
import random
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from nika_tui.domain import debt
from nika_tui.domain.debt import AuditReport, Decision, MetricReport, build_metric
from nika_tui.domain.memory import Layer, Status
from nika_tui.domain.ports import PointFilter, VectorStore
from nika_tui.domain.sampling import (
    estimate_proportion,
    mean_interval,
    percentile_estimate,
)
from nika_tui.domain.strategies import available_strategies, recommendation
from nika_tui.domain.verdicts import Fact, Verdict
from nika_tui.engine.context import EngineContext
from nika_tui.engine.judge_pairs import JudgedPair, recent_judged_pairs, second_judge
from nika_tui.errors import JudgeError, NikaError, ValidationFailed
from nika_tui.services import redis_keys
from nika_tui.services.config_store import list_tenant_ids
from nika_tui.services.kernel_store import (
    pending_confirmation,
    pod_ttfl_samples,
    queue_confirmation,
)

DEFAULT_INTERVAL_S = 6 * 3600
"""The service audits every tenant this often (``NIKA_AUDIT_INTERVAL_S``)."""
DUPLICATE_SAMPLE = 1000
"""Points sampled for duplicate_rate: ±1.4 points at p = 5 % (95 % Wilson)."""
JUDGE_SAMPLE = 50
RETIRED_KEPT = 4 * JUDGE_SAMPLE
TTFL_WINDOW = 100
HISTORY_MAXLEN = 2000
PAUSE_PREFIX = "debt:"
"""Value prefix of an ``ingest_paused`` set by the audit (it only clears its own pause)."""


@dataclass
class Inventory:
    """What one scroll of a tenant's points found."""

    total: int = 0
    current: int = 0
    retired: int = 0
    asserted_24h: int = 0
    sample: list[tuple[Layer, str]] = field(default_factory=list)
    per_layer: dict[str, dict[str, int]] = field(default_factory=dict)
    recent_retired: list[tuple[float, str, Mapping[str, Any]]] = field(default_factory=list)
    """Min-heap of the most recently retired payloads (retired_at, id, payload)."""

    def retired_payloads(self) -> list[Mapping[str, Any]]:
        """Recently retired payloads, newest first."""
        return [p for _, _, p in sorted(self.recent_retired, key=lambda x: x[0], reverse=True)]


def _parse_ts(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        ts = datetime.fromisoformat(value)
    except ValueError:
        return None
    return (ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts).timestamp()


def inventory(
    vectors: VectorStore, tenant_id: str, now: datetime, sample_size: int, rng: random.Random
) -> Inventory:
    """One pass over the tenant's points: counts, 24-hour additions, a uniform sample.

    The sample of *current* points is drawn by reservoir sampling (algorithm R) during the
    scroll, so it is uniform over both layers without a second pass.

    Args:
        vectors: The store.
        tenant_id: The tenant.
        now: Audit time.
        sample_size: Reservoir size.
        rng: Seeded random source.

    Returns:
        The inventory.
    """
    inv = Inventory()
    since = (now - timedelta(days=1)).timestamp()
    seen_current = 0
    for layer in Layer:
        counts = {"total": 0, "current": 0, "retired": 0}
        for p in vectors.scroll(tenant_id, layer, batch=2048):
            counts["total"] += 1
            asserted = _parse_ts(p.payload.get("asserted_at"))
            if asserted is not None and asserted >= since:
                inv.asserted_24h += 1
            if p.payload.get("status") != Status.CURRENT.value:
                counts["retired"] += 1
                if p.payload.get("superseded_by"):
                    retired_at = _parse_ts(p.payload.get("retired_at")) or 0.0
                    item = (retired_at, p.id, p.payload)
                    if len(inv.recent_retired) < RETIRED_KEPT:
                        heapq.heappush(inv.recent_retired, item)
                    elif retired_at > inv.recent_retired[0][0]:
                        heapq.heapreplace(inv.recent_retired, item)
                continue
            counts["current"] += 1
            seen_current += 1
            if len(inv.sample) < sample_size:
                inv.sample.append((layer, p.id))
            else:
                j = rng.randrange(seen_current)
                if j < sample_size:
                    inv.sample[j] = (layer, p.id)
        inv.per_layer[layer.value] = counts
        inv.total += counts["total"]
        inv.current += counts["current"]
        inv.retired += counts["retired"]
    return inv


def duplicate_flags(
    vectors: VectorStore, tenant_id: str, sample: Sequence[tuple[Layer, str]]
) -> list[bool]:
    """For each sampled point: does its nearest other current point have cosine > 0.95?

    Uses Qdrant's own neighbour search (top-2 within tenant, layer and ``status=current``:
    the first hit is usually the point itself).

    Args:
        vectors: The store.
        tenant_id: The tenant.
        sample: ``(layer, id)`` of sampled current points.

    Returns:
        One flag per sampled point still present (points purged meanwhile are skipped).
    """
    flags: list[bool] = []
    current = PointFilter(equals={"status": Status.CURRENT.value})
    for layer in Layer:
        ids = [pid for lay, pid in sample if lay is layer]
        for start in range(0, len(ids), 256):
            for point in vectors.retrieve(
                tenant_id, layer, ids[start : start + 256], with_vectors=True
            ):
                if point.vector is None:
                    continue
                hits = vectors.search_dense(tenant_id, layer, point.vector, flt=current, limit=2)
                other = next((h for h in hits if h.id != point.id), None)
                flags.append(other is not None and other.score > debt.DUPLICATE_COSINE)
    return flags


@dataclass(frozen=True)
class LoggedQuery:
    """One recall read back from the query log."""

    at: str
    query: str
    project_id: str
    job_id: str
    task_id: str
    action_type: str
    context_project_id: str
    ids: list[str]
    cosines: list[float]


def _json_list(raw: str | None) -> list[Any]:
    try:
        value = json.loads(raw or "[]")
    except json.JSONDecodeError:
        return []
    return value if isinstance(value, list) else []


def recent_queries(ctx: EngineContext, tenant_id: str, n: int) -> list[LoggedQuery]:
    """The ``n`` most recent recalls of the tenant's query log (newest first)."""
    out: list[LoggedQuery] = []
    entries: list[tuple[str, dict[str, str]]] = ctx.redis.xrevrange(  # type: ignore[assignment]
        redis_keys.query_log(tenant_id), count=n
    )
    for _id, fields in entries:
        try:
            filters = json.loads(fields.get("filters") or "{}")
        except json.JSONDecodeError:
            filters = {}
        if not isinstance(filters, dict):
            filters = {}
        out.append(
            LoggedQuery(
                at=fields.get("at", ""),
                query=fields.get("query", ""),
                project_id=fields.get("project_id", "") or str(filters.get("project_id") or ""),
                job_id=str(filters.get("job_id") or fields.get("job_id") or ""),
                task_id=str(filters.get("task_id") or fields.get("task_id") or ""),
                action_type=str(filters.get("action_type") or fields.get("action_type") or ""),
                context_project_id=fields.get("context_project_id", ""),
                ids=[str(i) for i in _json_list(fields.get("ids"))],
                cosines=[float(c) for c in _json_list(fields.get("cosines"))],
            )
        )
    return out


def _payloads(
    vectors: VectorStore, tenant_id: str, ids: Sequence[str]
) -> dict[str, Mapping[str, Any]]:
    found: dict[str, Mapping[str, Any]] = {}
    wanted = list(dict.fromkeys(ids))
    for layer in Layer:
        missing = [i for i in wanted if i not in found]
        if not missing:
            break
        for p in vectors.retrieve(tenant_id, layer, missing):
            found[p.id] = p.payload
    return found


def query_metrics(
    ctx: EngineContext, tenant_id: str, now: datetime
) -> tuple[MetricReport, MetricReport, MetricReport]:
    """rag_offtopic_rate, cross_project_leakage and staleness_score from the query log."""
    queries = recent_queries(ctx, tenant_id, debt.QUERY_WINDOW)
    payloads = _payloads(ctx.vectors, tenant_id, [i for q in queries for i in q.ids])
    off, served = 0, 0
    leaked, scoped = 0, 0
    ages_all: list[float] = []
    ages_ops: list[float] = []
    # Queries behind each value: below debt.MIN_QUERY_SAMPLE a metric cannot warn or alert.
    n_scoped, n_ops = 0, 0
    for q in queries:
        project = q.project_id or q.context_project_id
        operational = q.action_type in debt.OPERATIONAL_ACTIONS or bool(q.job_id or q.task_id)
        n_scoped += bool(project)
        n_ops += operational
        for rank, mid in enumerate(q.ids):
            payload = payloads.get(mid)
            if payload is None:
                continue  # purged since: neither on nor off topic
            cosine = q.cosines[rank] if rank < len(q.cosines) else 1.0
            served += 1
            outside = any(
                want and str(payload.get(key) or "") != want
                for key, want in (
                    ("project_id", q.project_id),
                    ("job_id", q.job_id),
                    ("task_id", q.task_id),
                )
            )
            if outside or cosine < debt.OFFTOPIC_COSINE_FLOOR:
                off += 1
            if project:
                scoped += 1
                chunk_project = str(payload.get("project_id") or "")
                if chunk_project and chunk_project != project:
                    leaked += 1
            if rank < 5:
                valid = _parse_ts(payload.get("valid_from"))
                if valid is not None:
                    age = max(0.0, (now.timestamp() - valid) / 86400.0)
                    ages_all.append(age)
                    if operational:
                        ages_ops.append(age)
    n_q = len(queries)
    offtopic = estimate_proportion(off, served)
    leakage = estimate_proportion(leaked, scoped)
    ages = ages_ops or ages_all
    stale = mean_interval(ages)
    tagged = "operational" if ages_ops else "all (none tagged operational)"
    return (
        build_metric(
            "rag_offtopic_rate",
            offtopic.value if served else None,
            sample_size=served,
            ci=(offtopic.low, offtopic.high) if served else None,
            detail=f"{off} of {served} chunks off topic over {n_q} queries",
            queries=n_q,
        ),
        build_metric(
            "cross_project_leakage",
            leakage.value if scoped else None,
            sample_size=scoped,
            ci=(leakage.low, leakage.high) if scoped else None,
            detail=f"{leaked} of {scoped} chunks from another project ({n_scoped} queries)",
            queries=n_scoped,
        ),
        build_metric(
            "staleness_score",
            stale.value if ages else None,
            sample_size=stale.sample_size,
            ci=(stale.low, stale.high) if len(ages) > 1 else None,
            detail=f"mean age of {len(ages)} top-5 chunks, queries: {tagged}",
            queries=n_ops if ages_ops else n_q,
        ),
    )


def compaction_age(ctx: EngineContext, tenant_id: str, now: datetime) -> MetricReport:
    """Mean minutes between consecutive compactions of the last 24 hours."""
    since_ms = int((now - timedelta(days=1)).timestamp() * 1000)
    entries: list[tuple[str, dict[str, str]]] = ctx.redis.xrange(  # type: ignore[assignment]
        redis_keys.compactions(tenant_id), min=f"{since_ms}-0"
    )
    stamps: list[float] = []
    for entry_id, fields in entries:
        at = _parse_ts(fields.get("at"))
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
            at = _parse_ts(data.get("at"))
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
    since_ms = int((now - timedelta(days=debt.GROWTH_SUSTAINED_DAYS + 1)).timestamp() * 1000)
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


@dataclass
class AuditOutcome:
    """One audit: the report, the decided actions and what was done about them."""

    report: AuditReport
    inventory: dict[str, Any]
    actions: list[dict[str, Any]] = field(default_factory=list)
    review_request: str | None = None
    ingest_paused: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the ``nika audit --json`` document for one tenant)."""
        data = self.report.model_dump(mode="json")
        data["inventory"] = self.inventory
        data["actions"] = self.actions
        data["review_request"] = self.review_request
        data["ingest_paused"] = self.ingest_paused
        return data


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
    growth_alert = metrics[1].status is debt.MetricStatus.ALERT
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
            recommendation(config) or debt.NO_STRATEGY_ADVICE,
        ),
    )
    report.critical = bool(report.critical_reasons)
    report.duration_s = round(time.monotonic() - started, 3)
    return report, inv


def _apply(ctx: EngineContext, tenant_id: str, kind: debt.ActionKind) -> dict[str, Any]:
    """Run the executor of one action (autonomous mode; see :mod:`.debt_actions`)."""
    from nika_tui.engine.debt_actions import apply_action

    try:
        return apply_action(ctx, tenant_id, kind)
    except NikaError as exc:
        # A failed action is reported; the audit itself is still recorded.
        return {"done": False, "error": exc.message, "hint": exc.hint}


def run_audit(
    ctx: EngineContext,
    tenant_id: str,
    *,
    sample_size: int = DUPLICATE_SAMPLE,
    seed: int | None = None,
    act: bool = True,
) -> AuditOutcome:
    """Measure, record in ``debt_history`` and on the bus, then act as auto-actions allow.

    Args:
        ctx: Engine context.
        tenant_id: The tenant.
        sample_size: Points sampled for duplicate_rate.
        seed: Random seed for reproducible samples.
        act: False to measure and record only (no action, no pause, no review request).

    Returns:
        The outcome.
    """
    report, inv = measure(ctx, tenant_id, sample_size=sample_size, seed=seed)
    outcome = AuditOutcome(
        report,
        {"total": inv.total, "current": inv.current, "retired": inv.retired,
         "asserted_24h": inv.asserted_24h, "per_layer": inv.per_layer},
    )  # fmt: skip
    config = ctx.tenant(tenant_id)
    now = report.at
    if act:
        for decision in debt.decide_actions(report, config.auto_actions):
            entry = decision.to_dict()
            if decision.decision is Decision.APPLY:
                entry["result"] = _apply(ctx, tenant_id, decision.action)
            elif decision.decision is Decision.CONFIRM:
                kind = f"debt.{decision.action.value}"
                existing = pending_confirmation(ctx.redis, tenant_id, kind)
                item = existing or queue_confirmation(
                    ctx.redis,
                    tenant_id,
                    kind,
                    f"memory debt: {decision.text}",
                    f"metrics in alert: {', '.join(decision.metrics)}",
                    now,
                )
                if existing is None:
                    ctx.bus(tenant_id).append(
                        "confirmation.requested", {"id": item["id"], "kind": kind}, now=now
                    )
                entry["confirmation_id"] = item["id"]
            outcome.actions.append(entry)
        from nika_tui.engine.reset_trigger import decide_reset

        reset_entry = decide_reset(ctx, tenant_id, report.strategies)  # strategy A (issue 22)
        if reset_entry is not None:
            outcome.actions.append(reset_entry)
        paused_key = redis_keys.ingest_paused(tenant_id)
        if report.critical:
            line = ctx.bus(tenant_id).append(
                "debt.review_request",
                {"reasons": report.critical_reasons, "report": report.model_dump(mode="json")},
                now=now,
            )
            outcome.review_request = str(line["id"])
            reason = PAUSE_PREFIX + "; ".join(report.critical_reasons)
            ctx.redis.set(paused_key, reason[:500], ex=debt.PAUSE_TTL_S)
            outcome.ingest_paused = True
        else:
            held = ctx.redis.get(paused_key)
            if held is not None and str(held).startswith(PAUSE_PREFIX):
                ctx.redis.delete(paused_key)
    data = outcome.to_dict()
    ctx.redis.xadd(
        redis_keys.debt_history(tenant_id),
        {"at": now.isoformat(), "report": json.dumps(data, default=str)},
        maxlen=HISTORY_MAXLEN,
        approximate=True,
    )
    ctx.bus(tenant_id).append(
        "debt.audit",
        {
            "critical": report.critical,
            "metrics": {
                m.name: {"value": m.value, "status": m.status.value} for m in report.metrics
            },
            "actions": [
                {"action": a["action"], "decision": a["decision"]} for a in outcome.actions
            ],
        },
        now=now,
    )
    return outcome


def audit_history(ctx: EngineContext, tenant_id: str, count: int = 100) -> list[dict[str, Any]]:
    """The last ``count`` audit runs, oldest first (for sparklines)."""
    entries: list[tuple[str, dict[str, str]]] = ctx.redis.xrevrange(  # type: ignore[assignment]
        redis_keys.debt_history(tenant_id), count=count
    )
    out: list[dict[str, Any]] = []
    for _id, fields in reversed(entries):
        try:
            out.append(json.loads(fields.get("report", "{}")))
        except json.JSONDecodeError:
            continue
    return out


def audit_interval_s(env: Mapping[str, str]) -> float:
    """``NIKA_AUDIT_INTERVAL_S`` (default 6 hours)."""
    raw = env.get("NIKA_AUDIT_INTERVAL_S", "")
    try:
        return float(raw) if raw else float(DEFAULT_INTERVAL_S)
    except ValueError:
        return float(DEFAULT_INTERVAL_S)


def last_audit_at(ctx: EngineContext, tenant_id: str) -> float | None:
    """Epoch seconds of the tenant's last audit, if any (from ``debt_history``)."""
    entries: list[tuple[str, dict[str, str]]] = ctx.redis.xrevrange(  # type: ignore[assignment]
        redis_keys.debt_history(tenant_id), count=1
    )
    if not entries:
        return None
    return _parse_ts(entries[0][1].get("at"))


def due_tenants(ctx: EngineContext) -> Iterator[str]:
    """Tenants whose last audit is older than the interval."""
    interval = audit_interval_s(ctx.env)
    now = ctx.clock().timestamp()
    for tenant_id in list_tenant_ids(ctx.env):
        last = last_audit_at(ctx, tenant_id)
        if last is None or now - last >= interval:
            yield tenant_id


def _tenants(ctx: EngineContext, body: Mapping[str, Any]) -> list[str]:
    wanted = body.get("tenant_id")
    if wanted:
        return [str(wanted)]
    return list_tenant_ids(ctx.env)


def audit_op(ctx: EngineContext, body: dict[str, Any]) -> dict[str, Any]:
    sample = body.get("sample_size", DUPLICATE_SAMPLE)
    if not isinstance(sample, int) or sample < 1:
        raise ValidationFailed("sample_size must be a positive integer", "e.g. 1000")
    act = bool(body.get("act", True))
    seed = body.get("seed")
    out = {}
    for tenant_id in _tenants(ctx, body):
        result = run_audit(
            ctx,
            tenant_id,
            sample_size=sample,
            seed=seed if isinstance(seed, int) else None,
            act=act,
        )
        out[tenant_id] = result.to_dict()
    return {"tenants": out}


def audit_history_op(ctx: EngineContext, body: dict[str, Any]) -> dict[str, Any]:
    count = body.get("count", 100)
    return {
        "tenants": {
            t: audit_history(ctx, t, count if isinstance(count, int) else 100)
            for t in _tenants(ctx, body)
        }
    }
