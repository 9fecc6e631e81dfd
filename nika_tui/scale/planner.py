"""Strategy B's decision, pure: given readings, the tenant's config and its workers, what to do.

- saturated (any indicator) → ``scale_out`` on a provider the tenant configured whose strategy
  :func:`~nika_tui.domain.strategies.available_strategies` lists (EU capacity first, then GPU;
  the cheapest estimate within one), unless ``scale.max_workers`` is reached; no provider →
  ``unavailable`` with the seed's recommendation;
- calm for ``calm_s`` (hysteresis: every indicator under 60 % of its threshold) with workers →
  ``decommission`` of the newest worker, one per plan;
- otherwise ``none``.
Plan ids come from the caller (ids are arguments); applying is :mod:`nika_tui.scale.actions`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from nika_tui.domain.strategies import (
    PROVIDER_STRATEGY,
    Strategy,
    available_strategies,
    recommendation,
)
from nika_tui.domain.tenant import Provider, TenantConfig
from nika_tui.scale.indicators import Reading


class PlanKind(StrEnum):
    SCALE_OUT = "scale_out"
    DECOMMISSION = "decommission"
    NONE = "none"
    UNAVAILABLE = "unavailable"


@dataclass(frozen=True, slots=True)
class Worker:
    """A worker nika created and tracks."""

    tenant_id: str
    provider: Provider
    instance_id: str
    plan_id: str
    created_at: str
    cost_per_hour_eur: float

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "tenant_id": self.tenant_id,
            "provider": self.provider.value,
            "instance_id": self.instance_id,
            "plan_id": self.plan_id,
            "created_at": self.created_at,
            "cost_per_hour_eur": self.cost_per_hour_eur,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Worker:
        """Inverse of :meth:`as_dict`."""
        return cls(
            str(data["tenant_id"]),
            Provider(data["provider"]),
            str(data["instance_id"]),
            str(data["plan_id"]),
            str(data["created_at"]),
            float(data["cost_per_hour_eur"]),
        )


@dataclass(frozen=True, slots=True)
class Plan:
    """One decision; ``plan_id`` is its idempotency key."""

    plan_id: str
    tenant_id: str
    kind: PlanKind
    created_at: str
    reasons: tuple[str, ...] = ()
    provider: Provider | None = None
    instance_type: str | None = None
    region: str | None = None
    cost_per_hour_eur: float | None = None
    instance_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "plan_id": self.plan_id,
            "tenant_id": self.tenant_id,
            "kind": self.kind.value,
            "created_at": self.created_at,
            "reasons": list(self.reasons),
            "provider": self.provider.value if self.provider else None,
            "instance_type": self.instance_type,
            "region": self.region,
            "cost_per_hour_eur": self.cost_per_hour_eur,
            "instance_id": self.instance_id,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        """Inverse of :meth:`as_dict`."""
        provider = data.get("provider")
        return cls(
            plan_id=str(data["plan_id"]),
            tenant_id=str(data["tenant_id"]),
            kind=PlanKind(data["kind"]),
            created_at=str(data["created_at"]),
            reasons=tuple(data.get("reasons", ())),
            provider=Provider(provider) if provider else None,
            instance_type=data.get("instance_type"),
            region=data.get("region"),
            cost_per_hour_eur=data.get("cost_per_hour_eur"),
            instance_id=data.get("instance_id"),
        )

    def summary(self) -> str:
        """One line for a confirmation or the CLI."""
        if self.kind is PlanKind.SCALE_OUT and self.provider:
            return (
                f"add a worker on {self.provider.value}: {self.instance_type} in {self.region}, "
                f"about {self.cost_per_hour_eur:.3f} EUR/h"
            )
        if self.kind is PlanKind.DECOMMISSION and self.provider:
            return f"decommission worker {self.instance_id} on {self.provider.value}"
        return "; ".join(self.reasons) or self.kind.value


_STRATEGY_ORDER = (Strategy.SCALE_HORIZONTAL_EU, Strategy.SCALE_HORIZONTAL_GPU)


def choose_provider(config: TenantConfig) -> Provider | None:
    """The provider a new worker goes to, or ``None`` when no scale strategy is available."""
    available = set(available_strategies(config))
    candidates = [
        p for p in Provider if config.has_api_key(p) and PROVIDER_STRATEGY[p] in available
    ]
    if not candidates:
        return None

    def rank(p: Provider) -> tuple[int, float, int]:
        strategy = _STRATEGY_ORDER.index(PROVIDER_STRATEGY[p])
        cost = config.scale.for_provider(p.value).cost_per_hour_eur
        return strategy, cost, list(Provider).index(p)

    return min(candidates, key=rank)


def make_plan(
    config: TenantConfig,
    readings: Sequence[Reading],
    is_calm: bool,
    workers: Sequence[Worker],
    now: datetime,
    plan_id: str,
) -> Plan:
    """Decide what strategy B does for this tenant now (see the module docstring)."""
    at = now.isoformat()
    tenant = config.tenant_id
    saturated = [r for r in readings if r.saturated]
    if saturated:
        reasons = tuple(
            f"{r.indicator.value} {r.value if r.value is None else round(r.value, 2)} > "
            f"{round(r.threshold, 2)}"
            for r in saturated
        )
        if len(workers) >= config.scale.max_workers:
            why = f"max_workers ({config.scale.max_workers}) reached"
            return Plan(plan_id, tenant, PlanKind.NONE, at, (*reasons, why))
        provider = choose_provider(config)
        if provider is None:
            advice = recommendation(config) or "no scale provider configured"
            return Plan(plan_id, tenant, PlanKind.UNAVAILABLE, at, (*reasons, advice))
        shape = config.scale.for_provider(provider.value)
        return Plan(
            plan_id,
            tenant,
            PlanKind.SCALE_OUT,
            at,
            reasons,
            provider,
            shape.instance_type,
            shape.region,
            shape.cost_per_hour_eur,
        )
    if is_calm and workers:
        newest = max(workers, key=lambda w: w.created_at)
        return Plan(
            plan_id,
            tenant,
            PlanKind.DECOMMISSION,
            at,
            ("calm: every indicator under 60% of its threshold for the calm window",),
            newest.provider,
            instance_id=newest.instance_id,
            cost_per_hour_eur=newest.cost_per_hour_eur,
        )
    return Plan(plan_id, tenant, PlanKind.NONE, at, ("no saturation",))
