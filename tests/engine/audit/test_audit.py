"""The debt audit on real stores, each metric on data whose right value is known by construction."""

from __future__ import annotations

import json
import random
import uuid
from datetime import timedelta
from typing import Any

import pytest

from nika_tui.domain.judge_rules import RulesJudge
from nika_tui.domain.memory import Layer, Status
from nika_tui.domain.ports import PointFilter
from nika_tui.domain.tenant import AutoActions, AutoMode
from nika_tui.domain.verdicts import Fact, Verdict
from nika_tui.engine.audit.history import audit_history
from nika_tui.engine.audit.measure import measure
from nika_tui.engine.context import EngineContext
from nika_tui.engine.debt.run import run_audit
from nika_tui.engine.review import ReviewItem, ReviewStatus
from nika_tui.services import redis_keys
from nika_tui.services.config_store import save_tenant
from nika_tui.services.kernel_store import record_pod_ttfl
from tests.plugins.debt import T0, at_cosine, make_record, put, unit

TENANT = "acme"


def plant_duplicates(ctx: EngineContext, n: int, dup_points: int, seed: int = 5) -> None:
    """``n`` current points of which exactly ``dup_points`` have a neighbour at cosine 0.98.

    Ids come from the seeded generator too: the audit samples over ids, so random ids would make
    which points are sampled (and so every sampled metric) differ from run to run.
    """
    rng = random.Random(seed)

    def record(text: str) -> Any:
        return make_record(
            TENANT,
            text,
            asserted_at=T0,
            record_id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        )

    rows = []
    for i in range(0, dup_points, 2):
        v = unit(rng)
        rows.append((record(f"duplicated fact {i}"), v))
        rows.append((record(f"duplicated fact {i}"), at_cosine(v, 0.98, rng)))
    for i in range(n - dup_points):
        rows.append((record(f"distinct fact {i}"), unit(rng)))
    put(ctx, rows)


def test_duplicate_rate_census_is_exact(debt_ctx: EngineContext) -> None:
    plant_duplicates(debt_ctx, 1000, 70)  # exactly 7 %
    report, inv = measure(debt_ctx, TENANT, sample_size=5000, seed=1)
    m = report.metric("duplicate_rate")
    assert inv.current == 1000
    assert m.value == pytest.approx(0.07)
    assert m.ci == pytest.approx((0.07, 0.07))
    assert m.status.value == "alert"


def test_duplicate_rate_sample_ci_covers_the_planted_rate(debt_ctx: EngineContext) -> None:
    """A 95 % interval misses the true rate in about 1 sample of 20; asserting it on one sample
    is a coin that fails in CI. Over 20 seeded samples it must cover the planted 7 % at least 17
    times (a 95 % interval covering fewer is a broken interval), and stay informative."""
    plant_duplicates(debt_ctx, 1000, 70)
    covered = 0
    for seed in range(20):
        report, _ = measure(debt_ctx, TENANT, sample_size=300, seed=seed)
        m = report.metric("duplicate_rate")
        assert m.sample_size == 300
        assert m.ci is not None
        assert m.ci[1] - m.ci[0] < 0.08  # an informative interval, not [0, 1]
        covered += m.ci[0] <= 0.07 <= m.ci[1]
    assert covered >= 17, covered


def _log_query(ctx: EngineContext, ids: list[str], cosines: list[float], **fields: Any) -> None:
    filters = {k: v for k, v in fields.items() if k in ("job_id", "task_id", "action_type")}
    ctx.redis.xadd(
        redis_keys.query_log(TENANT),
        {
            "at": T0.isoformat(),
            "query": "q",
            "session_id": "s",
            "project_id": fields.get("project_id", ""),
            "filters": json.dumps(filters),
            "ids": json.dumps(ids),
            "cosines": json.dumps(cosines),
            "scores": json.dumps([0.1] * len(ids)),
            "palace": "0",
        },
    )


def test_query_log_metrics(debt_ctx: EngineContext) -> None:
    rng = random.Random(3)
    now = debt_ctx.clock()
    # 10 chunks of project p1 aged 10 days, 10 of project p2 aged 200 days.
    p1 = [
        make_record(TENANT, f"p1 fact {i}", project_id="p1", valid_from=now - timedelta(days=10))
        for i in range(10)
    ]
    p2 = [
        make_record(TENANT, f"p2 fact {i}", project_id="p2", valid_from=now - timedelta(days=200))
        for i in range(10)
    ]
    put(debt_ctx, [(r, unit(rng)) for r in p1 + p2])
    # 16 operational p1 queries: 4 p1 chunks (cosine 0.8) + 1 p2 chunk (cosine 0.8) each
    # (at least debt.MIN_QUERY_SAMPLE queries behind each metric).
    for q in range(16):
        ids = [p1[(q + k) % 10].id for k in range(4)] + [p2[q % 10].id]
        _log_query(debt_ctx, ids, [0.8] * 5, project_id="p1", action_type="debug")
    # 4 unscoped, non-operational queries: 5 p1 chunks at cosine 0.45 (< 0.50: drifted).
    for _ in range(4):
        _log_query(debt_ctx, [r.id for r in p1[:5]], [0.45] * 5)
    report, _ = measure(debt_ctx, TENANT, seed=1)
    offtopic = report.metric("rag_offtopic_rate")
    leakage = report.metric("cross_project_leakage")
    stale = report.metric("staleness_score")
    # off topic: 16 p2 chunks outside the p1 scope + 20 drifted chunks, of 100 served
    assert offtopic.value == pytest.approx(36 / 100)
    assert offtopic.sample_size == 100
    assert offtopic.status.value == "alert" and offtopic.note == ""
    # leakage: only project-scoped queries count: 16 of 80
    assert leakage.value == pytest.approx(16 / 80)
    assert leakage.status.value == "alert"
    # staleness: operational queries only: 64 chunks of 10 days + 16 of 200 days
    assert stale.value == pytest.approx((64 * 10 + 16 * 200) / 80)
    assert stale.sample_size == 80
    assert stale.status.value == "ok"


def test_growth_counts_asserted_minus_purged(debt_ctx: EngineContext) -> None:
    rng = random.Random(4)
    now = debt_ctx.clock()
    fresh = [
        (make_record(TENANT, f"new {i}", asserted_at=now - timedelta(hours=3)), unit(rng))
        for i in range(120)
    ]
    old = [
        (make_record(TENANT, f"old {i}", asserted_at=now - timedelta(days=3)), unit(rng))
        for i in range(30)
    ]
    put(debt_ctx, fresh + old)
    bus = debt_ctx.bus(TENANT)
    for i in range(20):
        bus.append("purge.removed", {"memory_id": str(i)}, now=now - timedelta(hours=1))
    bus.append("purge.removed", {"memory_id": "x"}, now=now - timedelta(days=2))  # outside
    report, _ = measure(debt_ctx, TENANT, seed=1)
    growth = report.metric("qdrant_growth_rate")
    assert growth.value == 100.0
    assert growth.status.value == "ok"


def test_compaction_age_bus_growth_and_ttfl(debt_ctx: EngineContext) -> None:
    now = debt_ctx.clock()
    for minutes in (90, 80, 60, 30, 0):  # gaps 10, 20, 30, 30 min → mean 22.5
        stamp = now - timedelta(minutes=minutes)
        debt_ctx.redis.xadd(
            redis_keys.compactions(TENANT),
            {"at": stamp.isoformat(), "trigger": "auto", "fill": "61"},
            id=f"{int(stamp.timestamp() * 1000)}-0",
        )
    bus = debt_ctx.bus(TENANT)
    yesterday = now - timedelta(days=1)
    filler = "x" * 10_000
    while bus.bytes_on(yesterday.date()) < 1_500_000:
        bus.append("kernel.event", {"pad": filler}, now=yesterday)
    expected_mb = bus.bytes_on(yesterday.date()) / 1e6
    for s in range(1, 101):
        record_pod_ttfl(debt_ctx.redis, TENANT, float(s))
    report, _ = measure(debt_ctx, TENANT, seed=1)
    age = report.metric("context_compaction_age")
    assert age.value == pytest.approx(22.5)
    assert age.sample_size == 4
    assert age.status.value == "alert"
    assert report.metric("audit_log_growth_rate").value == pytest.approx(expected_mb)
    ttfl = report.metric("pod_ttfl_p95")
    assert ttfl.value == 95.0
    assert ttfl.sample_size == 100
    assert ttfl.status.value == "alert"


PAIRS = [
    # (old, new, recorded status, whether the rules judge is expected to disagree)
    (
        "The staging server is alpha.internal",
        "I think the staging server might move to gamma.internal",
        "pending",
        False,
    ),
    ("The CI runs on GitHub Actions", "The team lunch is on Friday", "rejected", False),
    ("The database port is 5432", "The database port is no longer 5432", "approved", False),
    (
        "The staging server is alpha.internal",
        "The staging server moved from alpha.internal to beta.internal",
        "approved",
        False,
    ),
    ("Backups run at 02:00", "Backups run at 03:00", "approved", False),
    (
        "The staging server is alpha.internal",
        "The staging server is beta.internal",
        "approved",
        False,
    ),
    # A person approved a reworded update the rules read as another subject.
    (
        "The Postgres box is db-prod-01",
        "Our primary database host is pg-main-a since the failover",
        "approved",
        True,
    ),
]


def test_judge_disagreement_on_recorded_pairs(debt_ctx: EngineContext) -> None:
    old_t = T0 - timedelta(days=5)
    for i, (old, new, status, _) in enumerate(PAIRS):
        item = ReviewItem(
            id=f"r{i}",
            tenant_id=TENANT,
            layer=Layer.SEMANTIC,
            old_id=f"o{i}",
            new_id=f"n{i}",
            old_text=old,
            new_text=new,
            old_valid_from=old_t,
            new_valid_from=T0,
            reason="",
            judge="rules",
            created_at=T0,
            status=ReviewStatus(status),
            resolved_at=None if status == "pending" else T0,
        )
        debt_ctx.redis.hset(redis_keys.review_queue(TENANT), item.id, item.model_dump_json())
    report, _ = measure(debt_ctx, TENANT, seed=1)
    m = report.metric("judge_disagreement")
    assert m.sample_size == len(PAIRS)
    # The tenant judges with the learned offline judge: the second opinion is the
    # hand-written rules (another method), run here on the same pairs.
    recorded = {"pending": Verdict.UNCERTAIN, "approved": Verdict.REPLACE, "rejected": Verdict.KEEP}
    rules = RulesJudge()
    differ = [
        i
        for i, (old, new, status, _) in enumerate(PAIRS)
        if rules.judge(Fact(old, old_t), Fact(new, T0)).verdict is not recorded[status]
    ]
    assert differ == [i for i, pair in enumerate(PAIRS) if pair[3]]
    assert m.value == pytest.approx(len(differ) / len(PAIRS))
    assert m.detail.startswith("rules vs recorded verdicts")
    assert all(f"o{i}→n{i}" in m.detail for i in differ)


def _set_mode(mode: AutoMode) -> None:
    from nika_tui.services.config_store import load_tenant

    config = load_tenant(TENANT)
    save_tenant(config.model_copy(update={"auto_actions": AutoActions(rem=mode)}))


def _current(ctx: EngineContext) -> int:
    return ctx.vectors.count(TENANT, Layer.SEMANTIC, PointFilter(equals={"status": "current"}))


@pytest.mark.parametrize("mode", list(AutoMode), ids=[m.value for m in AutoMode])
def test_actions_follow_the_auto_actions_setting(debt_ctx: EngineContext, mode: AutoMode) -> None:
    _set_mode(mode)
    plant_duplicates(debt_ctx, 200, 40)  # 20 % duplicates: alert and critical (>= 7.5 %)
    outcome = run_audit(debt_ctx, TENANT, sample_size=1000, seed=1)
    dedup = next(a for a in outcome.actions if a["action"] == "dedup")
    confirmations = debt_ctx.redis.hgetall(redis_keys.confirmations(TENANT))
    if mode is AutoMode.AUTONOMOUS:
        assert dedup["decision"] == "apply"
        assert dedup["result"]["done"] is True
        assert _current(debt_ctx) == 180  # one of each planted pair retired, never deleted
        assert debt_ctx.vectors.count(TENANT, Layer.SEMANTIC) == 200
        assert not confirmations
    elif mode is AutoMode.ESCALATE:
        assert dedup["decision"] == "confirm"
        assert _current(debt_ctx) == 200
        items = [json.loads(v) for v in confirmations.values()]
        assert [i["kind"] for i in items] == ["debt.dedup"]
        assert items[0]["status"] == "pending"
        # a second audit does not queue the same confirmation twice
        run_audit(debt_ctx, TENANT, sample_size=1000, seed=1)
        assert len(debt_ctx.redis.hgetall(redis_keys.confirmations(TENANT))) == 1
    else:
        assert dedup["decision"] == "report"
        assert _current(debt_ctx) == 200
        assert not confirmations
    # the critical level opens a review request and pauses bulk ingestion in every mode
    assert outcome.report.critical
    assert outcome.ingest_paused
    assert str(debt_ctx.redis.get(redis_keys.ingest_paused(TENANT))).startswith("debt:")
    kinds = [line.data["kind"] for line in debt_ctx.bus(TENANT).read() if line.data]
    assert "debt.review_request" in kinds and "debt.audit" in kinds


def test_history_is_kept_and_a_healthy_audit_lifts_its_pause(debt_ctx: EngineContext) -> None:
    _set_mode(AutoMode.AUTONOMOUS)
    plant_duplicates(debt_ctx, 200, 40)
    first = run_audit(debt_ctx, TENANT, sample_size=1000, seed=1)
    assert first.ingest_paused
    debt_ctx.clock.now += timedelta(hours=6)  # type: ignore[attr-defined]
    second = run_audit(debt_ctx, TENANT, sample_size=1000, seed=1)
    assert second.report.metric("duplicate_rate").value == 0.0
    assert not second.report.critical
    assert debt_ctx.redis.get(redis_keys.ingest_paused(TENANT)) is None
    history = audit_history(debt_ctx, TENANT)
    assert [h["metrics"][3]["value"] for h in history] == [0.2, 0.0]
    assert all(h["tenant_id"] == TENANT for h in history)


def test_a_pause_set_by_someone_else_is_left_alone(debt_ctx: EngineContext) -> None:
    debt_ctx.redis.set(redis_keys.ingest_paused(TENANT), "operator: maintenance")
    run_audit(debt_ctx, TENANT, seed=1)
    assert debt_ctx.redis.get(redis_keys.ingest_paused(TENANT)) == "operator: maintenance"


def test_audit_reads_only_current_points_for_duplicates(debt_ctx: EngineContext) -> None:
    rng = random.Random(9)
    v = unit(rng)
    put(
        debt_ctx,
        [
            (make_record(TENANT, "a fact"), v),
            (make_record(TENANT, "a fact", status=Status.RETIRED), at_cosine(v, 0.99, rng)),
            (make_record(TENANT, "another fact"), unit(rng)),
        ],
    )
    report, _ = measure(debt_ctx, TENANT, seed=1)
    assert report.metric("duplicate_rate").value == 0.0


def test_scheduler_audits_every_interval_and_asks_before_rem(debt_ctx: EngineContext) -> None:
    from nika_tui.engine.debt.schedule import DebtScheduler

    ticks = {"t": 0.0}
    scheduler = DebtScheduler(debt_ctx, check_every_s=60, monotonic=lambda: ticks["t"])
    assert scheduler.tick() == []  # the first look waits one interval after start
    ticks["t"] += 61
    assert scheduler.tick() == ["audit:acme", "rem-confirmation:acme"]  # escalate: asks
    assert scheduler.tick() == []  # checked less than a minute ago
    ticks["t"] += 61
    debt_ctx.clock.now += timedelta(hours=1)  # type: ignore[attr-defined]
    assert scheduler.tick() == []  # audit not due, the REM confirmation is already pending
    ticks["t"] += 61
    debt_ctx.clock.now += timedelta(hours=6)  # type: ignore[attr-defined]
    assert scheduler.tick() == ["audit:acme"]
    assert len(audit_history(debt_ctx, TENANT)) == 2
    _set_mode(AutoMode.AUTONOMOUS)
    ticks["t"] += 61
    assert scheduler.tick() == ["rem:acme"]


@pytest.mark.embedder
def test_ops_answer_over_rpc(running_service: Any, make_tenant: Any) -> None:
    make_tenant(TENANT)
    client = running_service.client
    audit = client.call("audit", {"tenant_id": TENANT, "seed": 1}, timeout=60)
    names = [m["name"] for m in audit["tenants"][TENANT]["metrics"]]
    assert len(names) == 9 and names[0] == "rag_offtopic_rate"
    assert client.call("purge.plan", {"tenant_id": TENANT}, timeout=60)["count"] == 0
    rem = client.call("rem.run", {"tenant_id": TENANT}, timeout=60)
    assert rem["tenants"][TENANT]["changed"] == 0
    assert len(client.call("audit.history", {"tenant_id": TENANT})["tenants"][TENANT]) == 1
