"""Memory debt: the seed's hyperparameters, their thresholds, actions and strategies (pure).

Seed 1, « Dette technique de la mémoire »: a memory that only grows degrades every decision.
Each metric below has a definition (written into the audit JSON), a threshold from the seed's
table, a direction (most are bad *above* the threshold; ``context_compaction_age`` is bad
*below* it), the seed's automatic action, and the strategy the « Indicateurs déclencheurs »
table suggests.

Status bands (documented in ``docs/debt.md``):

* ``alert`` — past the threshold (``value > threshold``; ``value < threshold`` for BELOW).
* ``warn`` — within 20 % of it: ``value > 0.8 × threshold`` (``value < threshold / 0.8`` for
  BELOW metrics), so an operator sees the trend before the alert.
* ``ok`` — otherwise, and whenever there is no data (``value`` is then None).

Critical level (seed, « Automatisation »: review request + pause of bulk ingestion) — any of:

* one metric at ≥ 1.5 × its threshold (≤ threshold / 1.5 for BELOW metrics);
* three or more metrics in ``alert`` at once.

While the tenant is critical, *bulk* writes wait: see :func:`is_bulk_write`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from nika_tui.domain.envelope import Trigger
from nika_tui.domain.tenant import AutoActions, AutoMode

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
    """

    name: str
    definition: str
    threshold: float
    direction: Direction
    unit: str
    window: str
    action: ActionKind
    strategy: Strategy | None


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
"""Queries a query-log metric needs before it may be ``warn`` / ``alert``: below it the status
is ``ok`` with ``note`` = :data:`INSUFFICIENT_SAMPLE` (one odd recall must not raise a critical
alert and pause ingestion)."""
QUERY_LOG_METRICS = frozenset({"rag_offtopic_rate", "cross_project_leakage", "staleness_score"})
INSUFFICIENT_SAMPLE = "insufficient sample"
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


class MetricReport(BaseModel):
    """One metric of one audit run, as written to JSON and the ``debt_history`` stream."""

    model_config = ConfigDict(extra="forbid")

    name: str
    value: float | None = Field(description="None when there was no data to measure.")
    threshold: float
    status: MetricStatus
    window: str
    sample_size: int = 0
    ci: tuple[float, float] | None = Field(default=None, description="95 % interval if sampled.")
    action: str = Field(description="The seed's action kind for this metric.")
    strategy: str | None = None
    definition: str = ""
    unit: str = ""
    direction: Direction = Direction.ABOVE
    detail: str = ""
    note: str = Field(default="", description="'insufficient sample' when too few queries.")


class AuditReport(BaseModel):
    """One audit run of one tenant."""

    model_config = ConfigDict(extra="forbid")

    tenant_id: str
    at: datetime
    metrics: list[MetricReport]
    critical: bool = False
    critical_reasons: list[str] = Field(default_factory=list)
    strategies: list[dict[str, object]] = Field(default_factory=list)
    duration_s: float = 0.0

    def metric(self, name: str) -> MetricReport:
        """The report of metric ``name``.

        Raises:
            KeyError: If the metric is not in this report.
        """
        for m in self.metrics:
            if m.name == name:
                return m
        raise KeyError(name)


def status_for(spec: MetricSpec, value: float | None) -> MetricStatus:
    """ok / warn / alert for ``value`` (ok when there is no data).

    Args:
        spec: The metric.
        value: Measured value, or None.

    Returns:
        The status band.
    """
    if value is None:
        return MetricStatus.OK
    if spec.direction is Direction.ABOVE:
        if value > spec.threshold:
            return MetricStatus.ALERT
        if value > WARN_FRACTION * spec.threshold:
            return MetricStatus.WARN
        return MetricStatus.OK
    if value < spec.threshold:
        return MetricStatus.ALERT
    if value < spec.threshold / WARN_FRACTION:
        return MetricStatus.WARN
    return MetricStatus.OK


def is_critical_value(spec: MetricSpec, value: float | None) -> bool:
    """True when ``value`` is past the critical level of its metric."""
    if value is None:
        return False
    # A relative tolerance, so that 1.5 x 0.05 computed in floating point still counts.
    if spec.direction is Direction.ABOVE:
        return value >= CRITICAL_FACTOR * spec.threshold * (1 - 1e-9)
    return value <= spec.threshold / CRITICAL_FACTOR * (1 + 1e-9)


def build_metric(
    name: str,
    value: float | None,
    *,
    sample_size: int = 0,
    ci: tuple[float, float] | None = None,
    detail: str = "",
    queries: int | None = None,
) -> MetricReport:
    """A :class:`MetricReport` for a measured value, with status, action and strategy.

    Args:
        name: A key of :data:`METRICS`.
        value: Measured value (None for no data).
        sample_size: Observations behind the value.
        ci: 95 % interval when the value is an estimate.
        detail: Free text (what was measured, why there is no data).
        queries: For a query-log metric, the queries behind the value: fewer than
            :data:`MIN_QUERY_SAMPLE` keep the status ``ok`` with an ``insufficient sample`` note.

    Returns:
        The report.

    Raises:
        KeyError: For an unknown metric name.
    """
    spec = METRICS[name]
    status = status_for(spec, value)
    note = ""
    if (
        name in QUERY_LOG_METRICS
        and queries is not None
        and value is not None
        and queries < MIN_QUERY_SAMPLE
    ):
        status, note = MetricStatus.OK, INSUFFICIENT_SAMPLE
    return MetricReport(
        name=name,
        value=value,
        threshold=spec.threshold,
        status=status,
        window=spec.window,
        sample_size=sample_size,
        ci=ci,
        action=spec.action.value,
        strategy=spec.strategy.value if spec.strategy else None,
        definition=spec.definition,
        unit=spec.unit,
        direction=spec.direction,
        detail=detail,
        note=note,
    )


def critical_reasons(metrics: list[MetricReport]) -> list[str]:
    """Why a set of metrics is critical (empty when it is not).

    Args:
        metrics: One audit's metrics.

    Returns:
        One line per reason.
    """
    reasons: list[str] = []
    for m in metrics:
        spec = METRICS.get(m.name)
        if m.note == INSUFFICIENT_SAMPLE:
            continue  # too few queries to call it critical
        if spec is not None and is_critical_value(spec, m.value):
            bound = (
                f">= {CRITICAL_FACTOR} x {spec.threshold:g}"
                if spec.direction is Direction.ABOVE
                else f"<= {spec.threshold:g} / {CRITICAL_FACTOR}"
            )
            reasons.append(f"{m.name} = {m.value:.4g} {spec.unit} ({bound})")
    alerts = [m.name for m in metrics if m.status is MetricStatus.ALERT]
    if len(alerts) >= CRITICAL_ALERT_COUNT:
        reasons.append(f"{len(alerts)} metrics in alert: {', '.join(alerts)}")
    return reasons


def strategy_letters(available: Collection[str]) -> set[str]:
    """Map ``nika_tui.domain.strategies`` names to the seed's letters.

    ``compress_to_repo`` is strategy A; ``scale_horizontal_eu`` / ``scale_horizontal_gpu`` are B.

    Args:
        available: Strategy values from ``available_strategies(config)``.

    Returns:
        The letters the tenant can use.
    """
    letters: set[str] = set()
    for name in available:
        if name == "compress_to_repo":
            letters.add(Strategy.A.value)
        elif name.startswith("scale_horizontal"):
            letters.add(Strategy.B.value)
    return letters


def suggest_strategies(
    metrics: list[MetricReport],
    available: Collection[str],
    growth_days_over: int = 0,
    no_strategy_advice: str = NO_STRATEGY_ADVICE,
) -> list[dict[str, object]]:
    """Trigger-table suggestions for the metrics in alert.

    The growth row needs the threshold exceeded on :data:`GROWTH_SUSTAINED_DAYS` consecutive
    days (``growth_days_over``, counted from the audit history by the caller).

    Args:
        metrics: One audit's metrics.
        available: Strategy letters available to the tenant ("A" needs a knowledge repo,
            "B" a provider): :func:`strategy_letters` of ``available_strategies(config)``.
        growth_days_over: Consecutive days the growth rate has been over its threshold.
        no_strategy_advice: What to say when the tenant has none of a row's strategies
            (``nika_tui.domain.strategies.recommendation``, the seed's advice).

    Returns:
        One dict per triggered row: indicator, strategies, reason, condition, available
        (those of the row's strategies the tenant has) and advice.
    """
    alerting = {m.name for m in metrics if m.status is MetricStatus.ALERT}
    out: list[dict[str, object]] = []
    for row in TRIGGERS:
        if row.metric is None or row.metric not in alerting:
            continue
        if row.metric == "qdrant_growth_rate" and growth_days_over < GROWTH_SUSTAINED_DAYS:
            continue
        have = [s.value for s in row.strategies if s.value in available]
        advice = (
            f"strategy {' + '.join(have)} suggested ({row.reason})" if have else no_strategy_advice
        )
        out.append(
            {
                "indicator": row.indicator,
                "strategies": [s.value for s in row.strategies],
                "reason": row.reason,
                "condition": row.condition,
                "available": have,
                "advice": advice,
            }
        )
    return out


class Decision(StrEnum):
    APPLY = "apply"  # autonomous: the engine acts now
    CONFIRM = "confirm"  # escalate: a confirmation is queued for a person
    REPORT = "report"  # off: the action is only reported


_DECISION_FOR_MODE: Mapping[AutoMode, Decision] = {
    AutoMode.AUTONOMOUS: Decision.APPLY,
    AutoMode.ESCALATE: Decision.CONFIRM,
    AutoMode.OFF: Decision.REPORT,
}


@dataclass(frozen=True, slots=True)
class ActionDecision:
    """What to do about one action a metric in alert calls for.

    Attributes:
        action: The action kind.
        metrics: The metrics in alert that call for it (an action is decided once).
        governed_by: The auto-actions setting consulted.
        mode: That setting's value.
        decision: apply / confirm / report.
        text: What the action does, for a person.
    """

    action: ActionKind
    metrics: tuple[str, ...]
    governed_by: str
    mode: AutoMode
    decision: Decision
    text: str

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "action": self.action.value,
            "metrics": list(self.metrics),
            "governed_by": self.governed_by,
            "mode": self.mode.value,
            "decision": self.decision.value,
            "text": self.text,
        }


def decide_actions(report: AuditReport, auto_actions: AutoActions) -> list[ActionDecision]:
    """The actions the metrics in alert call for, each decided by its auto-actions setting.

    ``autonomous`` → apply, ``escalate`` → queue a confirmation, ``off`` → report only.
    Two metrics asking for the same action (growth and duplicates both ask for dedup) yield
    one decision naming both.

    Args:
        report: One audit run.
        auto_actions: The tenant's auto-actions.

    Returns:
        Decisions, in metric order of the report.
    """
    by_action: dict[ActionKind, list[str]] = {}
    for m in report.metrics:
        if m.status is not MetricStatus.ALERT:
            continue
        by_action.setdefault(ActionKind(m.action), []).append(m.name)
    decisions: list[ActionDecision] = []
    for kind, names in by_action.items():
        spec = ACTIONS[kind]
        mode = AutoMode(getattr(auto_actions, spec.governed_by))
        decisions.append(
            ActionDecision(
                action=kind,
                metrics=tuple(names),
                governed_by=spec.governed_by,
                mode=mode,
                decision=_DECISION_FOR_MODE[mode],
                text=spec.text,
            )
        )
    return decisions


BULK_TRIGGERS = frozenset({Trigger.CRON, Trigger.DAEMON, Trigger.POD, Trigger.AUTONOMOUS})
"""Triggers of machine-driven, high-volume writes: the ones a debt pause holds back."""


def is_bulk_write(trigger: Trigger | str) -> bool:
    """True when a write with this trigger counts as bulk ingestion.

    The seed pauses *bulk* ingestion at the critical level so that noise stops growing; a
    person's or an agent hook's own writes (``user``, ``hook``, ``system``) still go through
    so working sessions keep their memory.

    Args:
        trigger: ``meta.trigger`` of the RememberRequest.

    Returns:
        Whether the write is bulk.
    """
    return Trigger(trigger) in BULK_TRIGGERS


def ingest_allowed(paused: bool, trigger: Trigger | str) -> bool:
    """Whether the ingest worker may store a write now.

    Rule for the ingest path: when ``nika:tenant:{t}:ingest:paused`` exists, a request whose
    ``meta.trigger`` is bulk (:data:`BULK_TRIGGERS`) is left pending in the stream (not
    acknowledged, not dropped) until the key is gone; other writes are stored as usual.

    Args:
        paused: Whether the tenant's ``ingest_paused`` key is set.
        trigger: ``meta.trigger`` of the request.

    Returns:
        True to store now, False to defer.
    """
    return not (paused and is_bulk_write(trigger))
