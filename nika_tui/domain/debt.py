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
* ``ok`` — otherwise.
* ``insufficient`` — no data (``value`` is None), or fewer observations than the metric's
  ``min_sample`` (:data:`~nika_tui.domain.debt_tables.METRICS`): the value is still reported,
  with a note ``insufficient data: n=3 of the 30 needed``, but it never warns, alerts, calls
  for an action nor counts toward the critical level (three memories are not a trend).

Critical level (seed, « Automatisation »: review request + pause of bulk ingestion) — any of:

* one metric at ≥ 1.5 × its threshold (≤ threshold / 1.5 for BELOW metrics);
* three or more metrics in ``alert`` at once.

While the tenant is critical, *bulk* writes wait: see :func:`is_bulk_write`. The tables (metrics,
actions, triggers) are :mod:`nika_tui.domain.debt_tables`.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from nika_tui.domain.debt_tables import (
    ACTIONS,
    CRITICAL_ALERT_COUNT,
    CRITICAL_FACTOR,
    DECISION_FOR_MODE,
    GROWTH_SUSTAINED_DAYS,
    INSUFFICIENT_SAMPLE,
    METRICS,
    NO_STRATEGY_ADVICE,
    TRIGGERS,
    WARN_FRACTION,
    ActionKind,
    Decision,
    Direction,
    MetricSpec,
    MetricStatus,
    Strategy,
)
from nika_tui.domain.envelope import Trigger
from nika_tui.domain.tenant import AutoActions, AutoMode


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
    note: str = Field(default="", description="'insufficient data: n=…' below min_sample.")


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
    """ok / warn / alert for ``value`` (``insufficient`` when there is no data).

    Args:
        spec: The metric.
        value: Measured value, or None.

    Returns:
        The status band.
    """
    if value is None:
        return MetricStatus.INSUFFICIENT
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
        queries: For a query-log metric, the queries behind the value (its ``n``; other
            metrics count ``sample_size``). Fewer than the metric's ``min_sample`` make the
            status ``insufficient`` with an ``insufficient data: n=…`` note.

    Returns:
        The report.

    Raises:
        KeyError: For an unknown metric name.
    """
    spec = METRICS[name]
    status = status_for(spec, value)
    n = queries if queries is not None else sample_size
    note = ""
    if value is None:
        note = f"{INSUFFICIENT_SAMPLE}: nothing to measure yet"
    elif n < spec.min_sample:
        status = MetricStatus.INSUFFICIENT
        note = f"{INSUFFICIENT_SAMPLE}: n={n} of the {spec.min_sample} needed"
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
        if m.status is MetricStatus.INSUFFICIENT:
            continue  # too few observations to call it critical
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
                decision=DECISION_FOR_MODE[mode],
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
