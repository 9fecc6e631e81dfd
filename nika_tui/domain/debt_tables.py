"""The seed's memory-debt tables (pure data): the tracked metrics with their thresholds and
definitions, the automatic actions, the « Indicateurs déclencheurs » strategy triggers, and the
enums they are written in. The rules that read them are :mod:`nika_tui.domain.debt`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from nika_tui.domain.tenant import AutoMode

WARN_FRACTION = 0.8
"""``warn`` starts at 80 % of an ABOVE threshold (at threshold / 0.8 for BELOW)."""
CRITICAL_FACTOR = 1.5
"""A metric at 1.5 × its threshold (threshold / 1.5 for BELOW) makes the tenant critical."""
CRITICAL_ALERT_COUNT = 3
"""So do this many metrics in alert at the same time."""
PAUSE_TTL_S = 24 * 3600
"""The ingest pause expires by itself after a day unless an audit renews it."""


class Direction(StrEnum):
    ABOVE = "above"  # bad when the value exceeds the threshold
    BELOW = "below"  # bad when the value falls under it


class MetricStatus(StrEnum):
    OK = "ok"
    WARN = "warn"
    ALERT = "alert"
    INSUFFICIENT = "insufficient"
    """No data, or fewer observations than the metric's ``min_sample``: never warn / alert."""


class Strategy(StrEnum):
    A = "A"  # compression into the knowledge repo
    B = "B"  # horizontal scaling on a provider


class ActionKind(StrEnum):
    """The seed's automatic actions (« Action automatique » column)."""

    RETAG = "retag"
    DEDUP = "dedup"
    TRIM_WORKING_MEMORY = "trim_working_memory"
    BOOST_RECENCY = "boost_recency"
    TIGHTEN_SCOPE = "tighten_scope"
    AUDIT_JUDGE_PROMPT = "audit_judge_prompt"
    ROTATE_LOGS = "rotate_logs"
    DIAGNOSE_SPAWN = "diagnose_spawn"


@dataclass(frozen=True, slots=True)
class ActionSpec:
    """One action: what it does, and which ``auto_actions`` setting governs it.

    Attributes:
        kind: The action.
        text: The seed's words (translated), shown to a person.
        governed_by: The :class:`AutoActions` field whose mode decides apply/confirm/report.
    """

    kind: ActionKind
    text: str
    governed_by: str


ACTIONS: dict[ActionKind, ActionSpec] = {
    ActionKind.RETAG: ActionSpec(
        ActionKind.RETAG,
        "re-tag Qdrant payloads and archive contradictions (REM re-judge pass)",
        "rem",
    ),
    ActionKind.DEDUP: ActionSpec(
        ActionKind.DEDUP,
        "deduplicate at cosine > 0.92 (REM merge: keep the best-sourced, retire the rest)",
        "rem",
    ),
    ActionKind.TRIM_WORKING_MEMORY: ActionSpec(
        ActionKind.TRIM_WORKING_MEMORY,
        "diagnose working-memory noise: ingest it into the RAG, then trim the context",
        "compact",
    ),
    ActionKind.BOOST_RECENCY: ActionSpec(
        ActionKind.BOOST_RECENCY, "boost recency in recall scoring", "rem"
    ),
    ActionKind.TIGHTEN_SCOPE: ActionSpec(
        ActionKind.TIGHTEN_SCOPE, "tighten scope / project_id filters in recall queries", "rem"
    ),
    ActionKind.AUDIT_JUDGE_PROMPT: ActionSpec(
        ActionKind.AUDIT_JUDGE_PROMPT,
        "audit the judge prompt (run `nika judge eval`) and compare judges",
        "rem",
    ),
    ActionKind.ROTATE_LOGS: ActionSpec(
        ActionKind.ROTATE_LOGS, "archive and rotate the local JSONL bus", "purge"
    ),
    ActionKind.DIAGNOSE_SPAWN: ActionSpec(
        ActionKind.DIAGNOSE_SPAWN,
        "diagnose the spawn primitive (Enter race condition) of the tenant's kernel",
        "scale",
    ),
}


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """A tracked hyperparameter (seed table « Hyperparamètres traçables »).

    Attributes:
        name: Metric name (the seed's).
        definition: Exact definition, written into the JSON report and the docs.
        threshold: The seed's alert threshold, in ``unit``.
        direction: Whether the bad side is above or below the threshold.
        unit: Unit of ``value`` (``ratio`` is a fraction in [0, 1]).
        window: What the value is computed over.
        action: The seed's action.
        strategy: The strategy of the trigger table (None when the table has no row).
        min_sample: Observations (``sample_size``; queries for a query-log metric) the
            value needs before it may be ``warn`` or ``alert``; below it the status is
            ``insufficient`` (docs/debt.md, decision 220).
    """

    name: str
    definition: str
    threshold: float
    direction: Direction
    unit: str
    window: str
    action: ActionKind
    strategy: Strategy | None
    min_sample: int = 1


OFFTOPIC_COSINE_FLOOR = 0.50
"""A returned chunk whose cosine to its query is below this has drifted off topic.

Recall already drops hits under 0.40 (PALACE); on all-MiniLM-L6-v2 questions about a stored fact
score 0.57-0.84 against it (docs/memory.md), so a served hit in [0.40, 0.50) is a weak match.
"""
DUPLICATE_COSINE = 0.95
"""Two current points above this cosine are duplicates (seed)."""
DEDUP_COSINE = 0.92
"""The dedup action (REM merge) merges above this cosine (seed)."""
QUERY_WINDOW = 50
"""Recent queries examined by the query-log metrics (seed: « sur 50 requêtes »)."""
MIN_QUERY_SAMPLE = 10
"""Queries a query-log metric needs before it may be ``warn`` / ``alert`` (its ``min_sample``):
one odd recall must not raise a critical alert and pause ingestion."""
QUERY_LOG_METRICS = frozenset({"rag_offtopic_rate", "cross_project_leakage", "staleness_score"})
INSUFFICIENT_SAMPLE = "insufficient data"
"""The start of ``note`` when a metric has fewer observations than its ``min_sample``."""
OPERATIONAL_ACTIONS = frozenset({"code", "debug", "deploy", "config", "system"})
"""``action_type`` values that make a logged query operational (staleness_score)."""

METRICS: dict[str, MetricSpec] = {
    "rag_offtopic_rate": MetricSpec(
        name="rag_offtopic_rate",
        definition=(
            "share of chunks returned by the last 50 recalls that are outside the query's "
            "scope (a project/job/task the query named differs from the chunk's) or whose "
            f"cosine to the query is below the drift floor {OFFTOPIC_COSINE_FLOOR}"
        ),
        threshold=0.30,
        direction=Direction.ABOVE,
        unit="ratio",
        window=f"last {QUERY_WINDOW} queries",
        action=ActionKind.RETAG,
        strategy=None,
        min_sample=MIN_QUERY_SAMPLE,
    ),
    "qdrant_growth_rate": MetricSpec(
        name="qdrant_growth_rate",
        definition=(
            "net points per day: points asserted in the last 24 h (both layers) minus "
            "points purged from the live index in the last 24 h (bus purge.removed)"
        ),
        threshold=10_000.0,
        direction=Direction.ABOVE,
        unit="points/day",
        window="last 24 h",
        action=ActionKind.DEDUP,
        strategy=Strategy.A,
    ),
    "context_compaction_age": MetricSpec(
        name="context_compaction_age",
        definition=(
            "mean time between two consecutive context compactions of the tenant's kernel "
            "(compactions stream), in minutes; too short means noise fills the context"
        ),
        threshold=30.0,
        direction=Direction.BELOW,
        unit="minutes",
        window="compactions of the last 24 h",
        action=ActionKind.TRIM_WORKING_MEMORY,
        strategy=None,
        min_sample=3,
    ),
    "duplicate_rate": MetricSpec(
        name="duplicate_rate",
        definition=(
            "share of current points whose nearest other current point (same tenant and "
            f"layer, Qdrant dense search) has cosine > {DUPLICATE_COSINE}; estimated on a "
            "uniform random sample with a 95 % Wilson interval"
        ),
        threshold=0.05,
        direction=Direction.ABOVE,
        unit="ratio",
        window="current points",
        action=ActionKind.DEDUP,
        strategy=None,
        min_sample=30,
    ),
    "staleness_score": MetricSpec(
        name="staleness_score",
        definition=(
            "mean age in days (now - valid_from) of the top-5 chunks returned by the last 50 "
            "operational recalls (action_type code/debug/deploy/config/system or a job/task "
            "scope; all recent recalls when none is tagged)"
        ),
        threshold=90.0,
        direction=Direction.ABOVE,
        unit="days",
        window=f"last {QUERY_WINDOW} operational queries",
        action=ActionKind.BOOST_RECENCY,
        strategy=None,
        min_sample=MIN_QUERY_SAMPLE,
    ),
    "cross_project_leakage": MetricSpec(
        name="cross_project_leakage",
        definition=(
            "share of chunks returned by the last 50 project-scoped recalls whose project_id "
            "is set and differs from the query's project"
        ),
        threshold=0.15,
        direction=Direction.ABOVE,
        unit="ratio",
        window=f"last {QUERY_WINDOW} project-scoped queries",
        action=ActionKind.TIGHTEN_SCOPE,
        strategy=Strategy.A,
        min_sample=MIN_QUERY_SAMPLE,
    ),
    "judge_disagreement": MetricSpec(
        name="judge_disagreement",
        definition=(
            "share of recently judged (old, new) pairs on which a second judge's verdict "
            "differs from the recorded one; sample of up to 50 pairs, 95 % Wilson interval"
        ),
        threshold=0.30,
        direction=Direction.ABOVE,
        unit="ratio",
        window="last 50 judged pairs",
        action=ActionKind.AUDIT_JUDGE_PROMPT,
        strategy=Strategy.A,
        min_sample=20,
    ),
    "audit_log_growth_rate": MetricSpec(
        name="audit_log_growth_rate",
        definition=(
            "bytes appended to the tenant's JSONL bus per day: the last complete UTC day, or "
            "today so far for a tenant younger than a day, in MB (10^6 bytes)"
        ),
        threshold=100.0,
        direction=Direction.ABOVE,
        unit="MB/day",
        window="last complete day",
        action=ActionKind.ROTATE_LOGS,
        strategy=None,
    ),
    "pod_ttfl_p95": MetricSpec(
        name="pod_ttfl_p95",
        definition=(
            "95th percentile (nearest rank) of the time to first log of the tenant's spawned "
            "kernels/pods, over the most recent 100 samples, in seconds"
        ),
        threshold=30.0,
        direction=Direction.ABOVE,
        unit="seconds",
        window="last 100 spawns",
        action=ActionKind.DIAGNOSE_SPAWN,
        strategy=Strategy.B,
        min_sample=20,
    ),
}
METRIC_NAMES: tuple[str, ...] = tuple(METRICS)


@dataclass(frozen=True, slots=True)
class TriggerRow:
    """A row of the seed's « Indicateurs déclencheurs » table."""

    indicator: str
    strategies: tuple[Strategy, ...]
    reason: str
    condition: str
    metric: str | None


TRIGGERS: tuple[TriggerRow, ...] = (
    TriggerRow(
        "judge_disagreement",
        (Strategy.A,),
        "incoherent memory",
        "> 30 % over 50 outputs",
        "judge_disagreement",
    ),
    TriggerRow(
        "cross_project_leakage",
        (Strategy.A,),
        "lost partitioning",
        "> 15 %",
        "cross_project_leakage",
    ),
    TriggerRow(
        "qdrant_growth_rate",
        (Strategy.A,),
        "purge",
        "> 10,000/day on 7 consecutive days",
        "qdrant_growth_rate",
    ),
    TriggerRow(
        "pod_ttfl_p95", (Strategy.B,), "compute saturated", "> 30 s over 30 min", "pod_ttfl_p95"
    ),
    TriggerRow("redis_queue_depth", (Strategy.B,), "worker spawn", "> 50 over 10 min", None),
    TriggerRow(
        "vps_load_avg", (Strategy.B, Strategy.A), "load", "> 0.85 × cores over 15 min", None
    ),
    TriggerRow("disk_usage_qdrant", (Strategy.A,), "urgent compression", "> 80 %", None),
)
GROWTH_SUSTAINED_DAYS = 7
"""The growth trigger needs this many consecutive days over threshold (seed)."""

NO_STRATEGY_ADVICE = (
    "no strategy is available: prefer a small, clean memory (seed) — run `nika rem run` and "
    "`nika purge plan`, and configure a knowledge repo (strategy A) or a provider (strategy B) "
    "with `nika setup`"
)


class Decision(StrEnum):
    APPLY = "apply"  # autonomous: the engine acts now
    CONFIRM = "confirm"  # escalate: a confirmation is queued for a person
    REPORT = "report"  # off: the action is only reported


DECISION_FOR_MODE: Mapping[AutoMode, Decision] = {
    AutoMode.AUTONOMOUS: Decision.APPLY,
    AutoMode.ESCALATE: Decision.CONFIRM,
    AutoMode.OFF: Decision.REPORT,
}
