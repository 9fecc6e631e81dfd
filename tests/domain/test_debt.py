"""Debt metrics: thresholds, status bands, critical level, actions, strategies (pure)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple

import pytest

from nika_tui.domain import debt, debt_tables
from nika_tui.domain.debt import (
    AuditReport,
    build_metric,
    critical_reasons,
    decide_actions,
    ingest_allowed,
    is_bulk_write,
    status_for,
    strategy_letters,
    suggest_strategies,
)
from nika_tui.domain.debt_tables import METRICS, ActionKind, Decision, MetricStatus
from nika_tui.domain.envelope import Trigger
from nika_tui.domain.tenant import AutoActions, AutoMode

NOW = datetime(2026, 12, 2, tzinfo=UTC)

SEED_THRESHOLDS = {
    "rag_offtopic_rate": 0.30,
    "qdrant_growth_rate": 10_000.0,
    "context_compaction_age": 30.0,
    "duplicate_rate": 0.05,
    "staleness_score": 90.0,
    "cross_project_leakage": 0.15,
    "judge_disagreement": 0.30,
    "audit_log_growth_rate": 100.0,
    "pod_ttfl_p95": 30.0,
}


def test_every_seed_metric_has_its_threshold_definition_action() -> None:
    assert {n: s.threshold for n, s in METRICS.items()} == SEED_THRESHOLDS
    for spec in METRICS.values():
        assert len(spec.definition) > 40
        assert spec.action in debt_tables.ACTIONS
        assert spec.window


class StatusCase(NamedTuple):
    test_id: str
    metric: str
    value: float | None
    expected: MetricStatus


STATUS = [
    StatusCase("no_data_is_insufficient", "duplicate_rate", None, MetricStatus.INSUFFICIENT),
    StatusCase("below_warn", "duplicate_rate", 0.039, MetricStatus.OK),
    StatusCase("warn_at_80pct", "duplicate_rate", 0.041, MetricStatus.WARN),
    StatusCase("at_threshold_not_alert", "duplicate_rate", 0.05, MetricStatus.WARN),
    StatusCase("alert_above", "duplicate_rate", 0.051, MetricStatus.ALERT),
    StatusCase("growth_alert", "qdrant_growth_rate", 10_001, MetricStatus.ALERT),
    # context_compaction_age is bad BELOW 30 min: warn under 30 / 0.8 = 37.5 min.
    StatusCase("compaction_ok", "context_compaction_age", 40.0, MetricStatus.OK),
    StatusCase("compaction_warn", "context_compaction_age", 35.0, MetricStatus.WARN),
    StatusCase("compaction_alert", "context_compaction_age", 29.0, MetricStatus.ALERT),
    StatusCase("ttfl_alert", "pod_ttfl_p95", 31.0, MetricStatus.ALERT),
]


@pytest.mark.parametrize("case", STATUS, ids=[c.test_id for c in STATUS])
def test_status_bands(case: StatusCase) -> None:
    assert status_for(METRICS[case.metric], case.value) is case.expected


def _report(values: dict[str, float | None]) -> AuditReport:
    # An ample sample behind every value: the minimum-sample rule has its own table below.
    metrics = [build_metric(name, values.get(name), sample_size=1000) for name in METRICS]
    return AuditReport(tenant_id="acme", at=NOW, metrics=metrics)


def test_build_metric_carries_definition_and_strategy() -> None:
    m = build_metric("judge_disagreement", 0.4, sample_size=50, ci=(0.27, 0.54))
    assert m.status is MetricStatus.ALERT
    assert m.strategy == "A"
    assert m.action == "audit_judge_prompt"
    assert "second judge" in m.definition
    assert build_metric("pod_ttfl_p95", 40.0).strategy == "B"


class CriticalCase(NamedTuple):
    test_id: str
    values: dict[str, float | None]
    critical: bool


CRITICAL = [
    CriticalCase("healthy", {"duplicate_rate": 0.01}, False),
    CriticalCase("one_alert_below_1_5x", {"duplicate_rate": 0.07}, False),
    CriticalCase("one_metric_at_1_5x", {"duplicate_rate": 0.075}, True),
    CriticalCase("below_metric_at_threshold_over_1_5", {"context_compaction_age": 20.0}, True),
    CriticalCase(
        "three_alerts",
        {"duplicate_rate": 0.06, "rag_offtopic_rate": 0.31, "pod_ttfl_p95": 31.0},
        True,
    ),
    CriticalCase("two_alerts", {"duplicate_rate": 0.06, "rag_offtopic_rate": 0.31}, False),
]


@pytest.mark.parametrize("case", CRITICAL, ids=[c.test_id for c in CRITICAL])
def test_critical_level(case: CriticalCase) -> None:
    assert bool(critical_reasons(_report(case.values).metrics)) is case.critical


class ModeCase(NamedTuple):
    test_id: str
    mode: AutoMode
    decision: Decision


MODES = [
    ModeCase("autonomous_applies", AutoMode.AUTONOMOUS, Decision.APPLY),
    ModeCase("escalate_confirms", AutoMode.ESCALATE, Decision.CONFIRM),
    ModeCase("off_reports", AutoMode.OFF, Decision.REPORT),
]


@pytest.mark.parametrize("case", MODES, ids=[c.test_id for c in MODES])
def test_decide_actions_follows_auto_actions(case: ModeCase) -> None:
    report = _report({"duplicate_rate": 0.06, "qdrant_growth_rate": 20_000, "pod_ttfl_p95": 40})
    auto = AutoActions(rem=case.mode, scale=case.mode)
    decisions = {d.action: d for d in decide_actions(report, auto)}
    # growth and duplicates both ask for dedup: one decision naming both metrics
    assert set(decisions) == {ActionKind.DEDUP, ActionKind.DIAGNOSE_SPAWN}
    assert decisions[ActionKind.DEDUP].metrics == ("qdrant_growth_rate", "duplicate_rate")
    assert decisions[ActionKind.DEDUP].governed_by == "rem"
    assert decisions[ActionKind.DIAGNOSE_SPAWN].governed_by == "scale"
    assert all(d.decision is case.decision for d in decisions.values())


def test_only_alerts_call_for_actions() -> None:
    report = _report({"duplicate_rate": 0.045})  # warn
    assert decide_actions(report, AutoActions()) == []


def test_each_action_uses_its_own_setting() -> None:
    report = _report({"audit_log_growth_rate": 150.0, "duplicate_rate": 0.06})
    auto = AutoActions(purge=AutoMode.AUTONOMOUS, rem=AutoMode.OFF)
    decisions = {d.action: d.decision for d in decide_actions(report, auto)}
    assert decisions == {ActionKind.ROTATE_LOGS: Decision.APPLY, ActionKind.DEDUP: Decision.REPORT}


def test_strategy_letters_map_h1_names() -> None:
    assert strategy_letters(["compress_to_repo"]) == {"A"}
    assert strategy_letters(["scale_horizontal_eu", "scale_horizontal_gpu"]) == {"B"}
    assert strategy_letters([]) == set()


def test_trigger_table_suggests_available_strategy_or_the_seed_advice() -> None:
    metrics = _report(
        {"judge_disagreement": 0.5, "pod_ttfl_p95": 45.0, "qdrant_growth_rate": 20_000}
    ).metrics
    rows = {r["indicator"]: r for r in suggest_strategies(metrics, {"A"}, growth_days_over=3)}
    assert rows["judge_disagreement"]["available"] == ["A"]
    assert rows["pod_ttfl_p95"]["available"] == []
    assert rows["pod_ttfl_p95"]["advice"] == debt_tables.NO_STRATEGY_ADVICE
    # growth needs 7 consecutive days over threshold
    assert "qdrant_growth_rate" not in rows
    rows7 = {r["indicator"] for r in suggest_strategies(metrics, {"A"}, growth_days_over=7)}
    assert "qdrant_growth_rate" in rows7


class BulkCase(NamedTuple):
    test_id: str
    trigger: Trigger
    paused: bool
    allowed: bool


BULK = [
    BulkCase("cron_paused", Trigger.CRON, True, False),
    BulkCase("daemon_paused", Trigger.DAEMON, True, False),
    BulkCase("pod_paused", Trigger.POD, True, False),
    BulkCase("autonomous_paused", Trigger.AUTONOMOUS, True, False),
    BulkCase("hook_passes", Trigger.HOOK, True, True),
    BulkCase("user_passes", Trigger.USER, True, True),
    BulkCase("cron_not_paused", Trigger.CRON, False, True),
]


@pytest.mark.parametrize("case", BULK, ids=[c.test_id for c in BULK])
def test_ingest_pause_rule(case: BulkCase) -> None:
    assert ingest_allowed(case.paused, case.trigger) is case.allowed
    assert is_bulk_write(case.trigger) is (case.trigger in debt.BULK_TRIGGERS)


class SampleCase(NamedTuple):
    test_id: str
    metric: str
    value: float | None
    sample_size: int
    queries: int | None
    status: MetricStatus
    note: str


SAMPLES = [
    # The three memories: 2 of 3 duplicates and 3 of 3 disagreements cry wolf.
    SampleCase("dup_three_points", "duplicate_rate", 0.667, 3, None, MetricStatus.INSUFFICIENT,
               "insufficient data: n=3 of the 30 needed"),
    SampleCase("dup_enough_points", "duplicate_rate", 0.667, 30, None, MetricStatus.ALERT, ""),
    SampleCase("judge_three_pairs", "judge_disagreement", 1.0, 3, None,
               MetricStatus.INSUFFICIENT, "insufficient data: n=3 of the 20 needed"),
    SampleCase("judge_enough_pairs", "judge_disagreement", 1.0, 20, None, MetricStatus.ALERT, ""),
    # staleness 208 days over 3 queries: reported, not judged.
    SampleCase("stale_few_queries", "staleness_score", 208.0, 15, 3, MetricStatus.INSUFFICIENT,
               "insufficient data: n=3 of the 10 needed"),
    SampleCase("stale_enough_queries", "staleness_score", 208.0, 50, 10, MetricStatus.ALERT, ""),
    SampleCase("compaction_two_gaps", "context_compaction_age", 5.0, 2, None,
               MetricStatus.INSUFFICIENT, "insufficient data: n=2 of the 3 needed"),
    SampleCase("ttfl_five_spawns", "pod_ttfl_p95", 60.0, 5, None, MetricStatus.INSUFFICIENT,
               "insufficient data: n=5 of the 20 needed"),
    SampleCase("growth_is_a_count", "qdrant_growth_rate", 20_000.0, 1, None,
               MetricStatus.ALERT, ""),
    SampleCase("no_value", "duplicate_rate", None, 0, None, MetricStatus.INSUFFICIENT,
               "insufficient data: nothing to measure yet"),
    SampleCase("ok_needs_the_sample_too", "duplicate_rate", 0.0, 3, None,
               MetricStatus.INSUFFICIENT, "insufficient data: n=3 of the 30 needed"),
]  # fmt: skip


@pytest.mark.parametrize("case", SAMPLES, ids=[c.test_id for c in SAMPLES])
def test_minimum_sample_before_warn_or_alert(case: SampleCase) -> None:
    m = build_metric(case.metric, case.value, sample_size=case.sample_size, queries=case.queries)
    assert (m.status, m.note) == (case.status, case.note)
    assert m.value == case.value  # still reported


def test_a_handful_of_points_is_never_critical_nor_an_action() -> None:
    # The tenant of three memories: every metric far past its threshold, n = 3.
    metrics = [
        build_metric("duplicate_rate", 0.667, sample_size=3),
        build_metric("judge_disagreement", 1.0, sample_size=3),
        build_metric("staleness_score", 208.0, sample_size=3, queries=3),
        build_metric("rag_offtopic_rate", 1.0, sample_size=3, queries=3),
    ]
    report = AuditReport(tenant_id="acme", at=NOW, metrics=metrics)
    assert critical_reasons(metrics) == []
    assert decide_actions(report, AutoActions()) == []
