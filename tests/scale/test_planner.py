"""The planner: provider as available_strategies says, caps, hysteresis."""

from __future__ import annotations

from datetime import UTC, datetime

from nika_tui.domain.tenant import Provider, ProviderConfig, SecretRef, SecretSource, TenantConfig
from nika_tui.scale.indicators import Indicator, Reading
from nika_tui.scale.planner import PlanKind, Worker, make_plan

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
HOT = [Reading(Indicator.CPU, 95.0, 80.0, 600, True, "scale")]
COOL = [Reading(Indicator.CPU, 10.0, 80.0, 600, False, "scale")]


def tenant(*providers: Provider, max_workers: int = 2) -> TenantConfig:
    ref = {"k": SecretRef(source=SecretSource.ENV, name="X")}
    config = TenantConfig(
        tenant_id="acme",
        display_name="Acme",
        providers={p: ProviderConfig(fields=ref) for p in providers},
    )
    config.scale.max_workers = max_workers
    return config


def worker(instance_id: str, created_at: str) -> Worker:
    return Worker("acme", Provider.SCALEWAY, instance_id, "p", created_at, 0.1)


def test_saturation_plans_a_worker_on_the_eu_provider_first() -> None:
    plan = make_plan(tenant(Provider.RUNPOD, Provider.SCALEWAY), HOT, False, [], NOW, "p1")
    assert plan.kind is PlanKind.SCALE_OUT
    assert plan.provider is Provider.SCALEWAY
    assert plan.instance_type == "PRO2-S" and plan.cost_per_hour_eur == 0.11
    assert "cpu 95.0 > 80.0" in plan.reasons[0]


def test_cheapest_within_one_strategy() -> None:
    plan = make_plan(tenant(Provider.SCALEWAY, Provider.CONTABO), HOT, False, [], NOW, "p1")
    assert plan.provider is Provider.CONTABO


def test_gpu_only_tenant_gets_gpu_provider() -> None:
    plan = make_plan(tenant(Provider.RUNPOD), HOT, False, [], NOW, "p1")
    assert plan.provider is Provider.RUNPOD


def test_no_provider_is_unavailable_with_the_seed_recommendation() -> None:
    plan = make_plan(tenant(), HOT, False, [], NOW, "p1")
    assert plan.kind is PlanKind.UNAVAILABLE
    assert any("Scaleway API key" in r for r in plan.reasons)


def test_max_workers_stops_scaling() -> None:
    workers = [worker("a", "2026-12-03T10:00"), worker("b", "2026-12-03T11:00")]
    plan = make_plan(tenant(Provider.SCALEWAY), HOT, False, workers, NOW, "p1")
    assert plan.kind is PlanKind.NONE
    assert "max_workers (2) reached" in plan.reasons


def test_calm_decommissions_the_newest_worker_only_when_calm() -> None:
    workers = [worker("old", "2026-12-03T10:00"), worker("new", "2026-12-03T11:00")]
    plan = make_plan(tenant(Provider.SCALEWAY), COOL, True, workers, NOW, "p1")
    assert plan.kind is PlanKind.DECOMMISSION and plan.instance_id == "new"
    # Not saturated but not calm either (hysteresis band): keep the workers.
    assert make_plan(tenant(Provider.SCALEWAY), COOL, False, workers, NOW, "p1").kind is (
        PlanKind.NONE
    )
