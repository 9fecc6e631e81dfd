"""A worker whose provisioning fails after the create returned is not left half-made (issue 18,
decision 503): ARM answers the PUT with ``Creating`` and may fail the VM later, keeping it with
``provisioningState: Failed``; reconcile stops tracking it and handles it as an orphan."""

from __future__ import annotations

import pytest

from nika_tui.domain.tenant import (
    AutoActions,
    AutoMode,
    Provider,
    ProviderConfig,
    SecretRef,
    SecretSource,
    TenantConfig,
)
from nika_tui.scale.actions import AdapterFactory, apply_plan, reconcile
from nika_tui.scale.planner import Plan, PlanKind
from nika_tui.scale.providers.base import CloudProvider, WorkerSpec
from nika_tui.scale.providers.factory import build_provider
from nika_tui.scale.state import ScaleState
from nika_tui.settings import Settings
from tests.scale.fake_clouds import CloudState
from tests.scale.support import NOW, SECRETS, live, shape

AZURE = Provider.AZURE


@pytest.fixture
def config() -> TenantConfig:
    refs = {f: SecretRef(source=SecretSource.ENV, name=f"AZ_{f.upper()}") for f in SECRETS[AZURE]}
    return TenantConfig(
        tenant_id="acme",
        display_name="Acme",
        providers={AZURE: ProviderConfig(fields=refs)},
        auto_actions=AutoActions(scale=AutoMode.AUTONOMOUS),
    )


@pytest.fixture
def factory(clouds: tuple[str, CloudState]) -> AdapterFactory:
    """The real Azure adapter at the stand-in, with the stand-in's credentials."""

    def make(_config: TenantConfig, provider: Provider) -> CloudProvider:
        return build_provider(provider, SECRETS[provider], shape(provider), base_url=clouds[0])

    return make


def _fail(cloud: CloudState) -> str:
    [vm] = cloud.instances["azure"].values()
    vm["properties"]["provisioningState"] = "Failed"  # as ARM does once the deployment fails
    return str(vm["name"])


def test_a_vm_failed_after_its_create_is_untracked_then_removed(
    config: TenantConfig, factory: AdapterFactory, clouds: tuple[str, CloudState]
) -> None:
    _, cloud = clouds
    state = ScaleState()
    plan = Plan("0a0b", "acme", PlanKind.SCALE_OUT, NOW.isoformat(), ("hot",), AZURE)
    state.save_plan(plan, "pending")
    assert (
        apply_plan(plan.plan_id, config, state, factory, NOW, Settings.from_env())["status"]
        == "applied"
    )
    assert len(reconcile([config], state, factory).tracked) == 1, "Creating: still a worker"
    name = _fail(cloud)

    report = reconcile([config], state, factory)
    assert [i["instance_id"] for i in report.failed] == [name]
    assert [i["instance_id"] for i in report.orphans] == [name]
    assert report.tracked == [] and state.workers("acme") == []
    assert len(live(cloud, AZURE)) == 1, "reported first, removed only when asked"

    report = reconcile([config], state, factory, remove=True)
    assert [i["instance_id"] for i in report.removed] == [name]
    assert live(cloud, AZURE) == []


def test_a_failed_vm_of_an_interrupted_apply_is_not_adopted(
    config: TenantConfig, factory: AdapterFactory, clouds: tuple[str, CloudState]
) -> None:
    _, cloud = clouds
    state = ScaleState()
    plan = Plan("0c0d", "acme", PlanKind.SCALE_OUT, NOW.isoformat(), ("hot",), AZURE)
    state.save_plan(plan, "pending")
    with state.transaction() as data:  # as if the process died right after the create
        data["plans"][plan.plan_id]["status"] = "applying"
    made = shape(AZURE)
    spec = WorkerSpec("acme", plan.plan_id, made.instance_type, made.region, made.image)
    factory(config, AZURE).create(spec)
    name = _fail(cloud)

    report = reconcile([config], state, factory)
    assert report.adopted == [] and [i["instance_id"] for i in report.orphans] == [name]
    assert state.plan(plan.plan_id)["status"] == "failed"
    assert state.workers("acme") == []
