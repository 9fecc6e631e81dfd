"""Apply once, refuse cleanly, reconcile orphans, and the off / escalate / autonomous modes."""

from __future__ import annotations

import json

import pytest

from nika_tui.domain.tenant import AutoMode, TenantConfig
from nika_tui.engine.kernels.confirmations import list_confirmations, resolve
from nika_tui.errors import ProviderError, ScaleError, ValidationFailed
from nika_tui.scale.actions import apply_plan, default_factory, reconcile
from nika_tui.scale.indicators import Indicator, Reading
from nika_tui.scale.planner import PlanKind, make_plan
from nika_tui.scale.policy import act
from nika_tui.scale.providers.base import WorkerSpec
from nika_tui.scale.state import ScaleState
from nika_tui.services.config_store import save_tenant
from nika_tui.settings import Settings
from tests.scale.conftest import scaleway_tenant
from tests.scale.fake_clouds import CloudState
from tests.scale.support import NOW, plan_for


def _servers(state: CloudState) -> list[dict]:
    return list(state.instances["scaleway"].values())


def test_apply_creates_one_tagged_worker_and_never_twice(acme: TenantConfig, clouds) -> None:
    _, cloud = clouds
    state = ScaleState()
    plan = plan_for(acme)
    state.save_plan(plan, "pending")
    record = apply_plan(plan.plan_id, acme, state, default_factory(), NOW, Settings.from_env())
    assert record["status"] == "applied"
    servers = _servers(cloud)
    assert len(servers) == 1
    assert {"nika-managed", "nika-tenant=acme", f"nika-plan={plan.plan_id}"} <= set(
        servers[0]["tags"]
    )
    assert servers[0]["user_data"].startswith("#cloud-config")
    assert [w.instance_id for w in state.workers("acme")] == [servers[0]["id"]]
    with pytest.raises(ScaleError, match="already applied"):
        apply_plan(plan.plan_id, acme, state, default_factory(), NOW, Settings.from_env())
    assert len(_servers(cloud)) == 1


def test_state_file_is_private(acme: TenantConfig) -> None:
    state = ScaleState()
    state.save_plan(plan_for(acme), "pending")
    assert state.path.stat().st_mode & 0o777 == 0o600
    assert state.dir.stat().st_mode & 0o777 == 0o700


def test_refusal_marks_the_plan_failed_and_leaves_nothing(acme: TenantConfig, clouds) -> None:
    _, cloud = clouds
    cloud.fail("POST", r"/servers$", 403, {"type": "quotas_exceeded", "message": "Quotas exceeded"})
    state = ScaleState()
    plan = plan_for(acme)
    state.save_plan(plan, "pending")
    with pytest.raises(ProviderError, match="Scaleway refused: quotas_exceeded"):
        apply_plan(plan.plan_id, acme, state, default_factory(), NOW, Settings.from_env())
    assert state.plan(plan.plan_id)["status"] == "failed"
    assert _servers(cloud) == [] and state.workers() == []
    with pytest.raises(ScaleError, match="never retried"):
        apply_plan(plan.plan_id, acme, state, default_factory(), NOW, Settings.from_env())


def test_missing_key_names_the_variable(clouds, monkeypatch) -> None:
    config = scaleway_tenant(clouds[0])
    save_tenant(config)
    state = ScaleState()
    plan = plan_for(config)
    state.save_plan(plan, "pending")
    with pytest.raises(ProviderError, match="SCW_ACCESS_KEY"):
        apply_plan(plan.plan_id, config, state, default_factory(), NOW, Settings.from_env())
    assert _servers(clouds[1]) == []


def test_reconcile_reports_then_removes_an_untracked_instance(acme, clouds) -> None:
    _, cloud = clouds
    adapter = default_factory()(acme, next(iter(acme.providers)))
    stray = adapter.create(WorkerSpec("acme", "0rphan", "PRO2-S", "fr-par-2", "ubuntu_noble"))
    state = ScaleState()
    report = reconcile([acme], state, default_factory())
    assert [o["instance_id"] for o in report.orphans] == [stray.instance_id]
    assert report.removed == [] and len(_servers(cloud)) == 1
    report = reconcile([acme], state, default_factory(), remove=True)
    assert [o["instance_id"] for o in report.removed] == [stray.instance_id]
    assert _servers(cloud) == []


def test_reconcile_adopts_an_instance_whose_plan_was_interrupted(acme, clouds) -> None:
    state = ScaleState()
    plan = plan_for(acme)
    state.save_plan(plan, "pending")
    with state.transaction() as data:  # as if the process died right after the create
        data["plans"][plan.plan_id]["status"] = "applying"
    adapter = default_factory()(acme, next(iter(acme.providers)))
    made = adapter.create(WorkerSpec("acme", plan.plan_id, "PRO2-S", "fr-par-2", "ubuntu_noble"))
    report = reconcile([acme], state, default_factory())
    assert [a["instance_id"] for a in report.adopted] == [made.instance_id]
    assert report.orphans == []
    assert state.plan(plan.plan_id)["status"] == "applied"
    assert [w.instance_id for w in state.workers("acme")] == [made.instance_id]


def test_mode_off_only_reports(clouds, scw_env, redis_client) -> None:
    config = scaleway_tenant(clouds[0], AutoMode.OFF)
    save_tenant(config)
    out = act(
        plan_for(config),
        config,
        ScaleState(),
        default_factory(),
        redis_client,
        NOW,
        Settings.from_env(),
    )
    assert out["action"] == "reported"
    assert _servers(clouds[1]) == []
    assert list_confirmations(redis_client, "acme") == []


def test_mode_escalate_asks_with_provider_type_and_cost_then_applies_once(
    acme, clouds, redis_client
) -> None:
    state = ScaleState()
    plan = plan_for(acme)
    out = act(plan, acme, state, default_factory(), redis_client, NOW, Settings.from_env())
    assert out["action"] == "confirmation"
    assert _servers(clouds[1]) == []
    [item] = list_confirmations(redis_client, "acme")
    assert item["kind"] == "scale.apply" and item["plan_id"] == plan.plan_id
    assert "scaleway" in item["title"] and "PRO2-S" in item["title"]
    assert "0.110 EUR/h" in item["title"]
    result = resolve(redis_client, "acme", item["id"], approve=True, settings=Settings.from_env())
    assert result["result"]["status"] == "applied"
    assert len(_servers(clouds[1])) == 1
    with pytest.raises(ValidationFailed):
        resolve(redis_client, "acme", item["id"], approve=True, settings=Settings.from_env())
    assert len(_servers(clouds[1])) == 1
    stored = json.loads(redis_client.hget("nika:tenant:acme:confirmations", item["id"]) or "{}")
    assert stored["status"] == "approved"


def test_mode_autonomous_applies(clouds, scw_env, redis_client) -> None:
    config = scaleway_tenant(clouds[0], AutoMode.AUTONOMOUS)
    save_tenant(config)
    out = act(
        plan_for(config),
        config,
        ScaleState(),
        default_factory(),
        redis_client,
        NOW,
        Settings.from_env(),
    )
    assert out["action"] == "applied"
    assert len(_servers(clouds[1])) == 1


def test_decommission_plan_deletes_the_worker(clouds, scw_env, redis_client) -> None:
    config = scaleway_tenant(clouds[0], AutoMode.AUTONOMOUS)
    save_tenant(config)
    state = ScaleState()
    act(
        plan_for(config, "aaaa"),
        config,
        state,
        default_factory(),
        redis_client,
        NOW,
        Settings.from_env(),
    )
    calm = [Reading(Indicator.CPU, 5.0, 80.0, 600, False, "scale")]
    plan = make_plan(config, calm, True, state.workers("acme"), NOW, "bbbb")
    assert plan.kind is PlanKind.DECOMMISSION
    out = act(plan, config, state, default_factory(), redis_client, NOW, Settings.from_env())
    assert out["action"] == "applied"
    assert _servers(clouds[1]) == [] and state.workers() == []


def test_an_unreadable_success_leaves_the_plan_for_reconcile(acme, clouds) -> None:
    _, cloud = clouds
    cloud.fail("POST", r"/servers$", 201, {"unexpected": True})
    state = ScaleState()
    plan = plan_for(acme)
    state.save_plan(plan, "pending")
    with pytest.raises(ScaleError, match="nika scale reconcile"):
        apply_plan(plan.plan_id, acme, state, default_factory(), NOW, Settings.from_env())
    assert state.plan(plan.plan_id)["status"] == "applying"
    with pytest.raises(ScaleError, match="already applied"):
        apply_plan(plan.plan_id, acme, state, default_factory(), NOW, Settings.from_env())
