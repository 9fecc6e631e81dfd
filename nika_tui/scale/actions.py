"""Apply, decommission and reconcile: the only code that makes strategy B touch a provider.

``apply_plan`` moves a plan to ``applying`` under the state lock before calling the provider,
so the same plan id can never create (or delete) twice; the provider's own idempotency (EC2's
``ClientToken``) and the plan tag on every instance cover a crash between the create and the
record: :func:`reconcile` adopts an instance whose plan is still ``applying`` and reports (or
removes, with ``remove=True``) any other instance nika tagged but does not track.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from nika_tui import __version__
from nika_tui.domain.tenant import Provider, TenantConfig
from nika_tui.errors import NikaError, ProviderError, ScaleError
from nika_tui.scale.container_start import boot_document
from nika_tui.scale.drain import drain, mark_draining, tenants_of, undrain, worker_id_for
from nika_tui.scale.planner import Plan, PlanKind, Worker
from nika_tui.scale.providers.base import (
    CloudProvider,
    Instance,
    WorkerSpec,
    provisioning_failed,
)
from nika_tui.scale.providers.factory import build_provider, provider_secrets
from nika_tui.scale.state import ScaleState
from nika_tui.services.secrets import SecretStore
from nika_tui.settings import Settings

#: Builds the adapter for a tenant's provider (secrets from the secret store).
AdapterFactory = Callable[[TenantConfig, Provider], CloudProvider]


def default_factory(secrets_env: Mapping[str, str] | None = None) -> AdapterFactory:
    """Adapters with secrets from the tenant's secret store (env references read in
    ``secrets_env``, ``os.environ`` when None) and its scale settings."""

    def make(config: TenantConfig, provider: Provider) -> CloudProvider:
        store = SecretStore(config.tenant_id, env=secrets_env)
        secrets = provider_secrets(config, provider, store)
        return build_provider(provider, secrets, config.scale.for_provider(provider.value))

    return make


def _join_url(settings: Settings) -> str:
    return settings.join_url or settings.redis_url or "redis://REPLACE-ME:6379/0"


def apply_plan(
    plan_id: str,
    config: TenantConfig,
    state: ScaleState,
    factory: AdapterFactory,
    now: datetime,
    settings: Settings,
    drain_wait_s: float = 120.0,
    wait: bool = True,
) -> dict[str, Any]:
    """Carry out one recorded plan exactly once.

    A decommission first drains the instance's worker (with the shared Redis of ``state``):
    its tenants move to the other workers, and the instance is deleted only once it holds none.
    With ``wait`` (a person at the CLI) this call waits for the drain, at most
    ``drain_wait_s``; without (the service loop, decision 456) it marks the worker, records the
    plan as ``draining`` with its deadline and returns: :func:`advance_drains` finishes it.

    Returns:
        The plan's record after the action (``status: applied`` and the instance id).

    Raises:
        ScaleError: Unknown plan, nothing to apply, already applied / failed / rejected, or
            the drain did not finish within ``drain_wait_s`` (the plan is then ``failed``).
        ProviderError: The provider refused; the plan is then ``failed`` and nothing is left.
    """
    with state.transaction() as data:
        record = data["plans"].get(plan_id)
        if record is None:
            raise ScaleError(f"no scale plan {plan_id!r}", "list plans with `nika scale status`")
        status = record.get("status")
        if status in ("applying", "applied", "draining"):
            raise ScaleError(
                f"scale plan {plan_id} was already applied (status {status}); nothing was done",
                "see `nika scale status`; make a new plan with `nika scale plan`",
            )
        if status in ("failed", "rejected"):
            raise ScaleError(
                f"scale plan {plan_id} is {status}; it is never retried as is",
                "make a new plan with `nika scale plan`",
            )
        plan = Plan.from_dict(record)
        if plan.kind not in (PlanKind.SCALE_OUT, PlanKind.DECOMMISSION) or plan.provider is None:
            raise ScaleError(f"scale plan {plan_id} has nothing to apply ({plan.kind.value})")
        if plan.tenant_id != config.tenant_id:
            raise ScaleError(f"scale plan {plan_id} belongs to tenant {plan.tenant_id}")
        record["status"] = "applying"
        worker_plan = next(
            (w["plan_id"] for w in data["workers"] if w["instance_id"] == plan.instance_id), None
        )
    try:
        adapter = factory(config, plan.provider)
        if plan.kind is PlanKind.SCALE_OUT:
            shape = config.scale.for_provider(plan.provider.value)
            spec = WorkerSpec(
                config.tenant_id,
                plan.plan_id,
                plan.instance_type or shape.instance_type,
                plan.region or shape.region,
                shape.image,
                boot_document(plan.provider)(
                    config.tenant_id, _join_url(settings), __version__, worker_id_for(plan.plan_id)
                ),
                shape.settings,
            )
            instance = adapter.create(spec)
            worker = Worker(
                config.tenant_id,
                plan.provider,
                instance.instance_id,
                plan.plan_id,
                now.isoformat(),
                plan.cost_per_hour_eur or shape.cost_per_hour_eur,
            )
        else:
            joined = worker_id_for(worker_plan) if worker_plan else None
            if joined is not None and state.client is not None:
                if not wait:
                    return _start_drain(state, plan_id, joined, now, drain_wait_s)
                drain(state.client, joined, drain_wait_s)
            adapter.delete(str(plan.instance_id))
    except (ProviderError, ScaleError) as exc:
        with state.transaction() as data:
            data["plans"][plan_id].update(status="failed", error=exc.message)
        raise
    except (KeyError, ValueError, TypeError) as exc:
        # A 2xx answer we cannot read: the instance may exist. The plan stays `applying`, so
        # reconcile adopts the tagged instance (or reports nothing if none was made).
        raise ScaleError(
            f"{plan.provider.value} answered scale plan {plan_id} in a form nika cannot read "
            f"({type(exc).__name__})",
            "run `nika scale reconcile` to adopt or remove what was created",
        ) from exc
    if plan.kind is not PlanKind.SCALE_OUT:
        return _deleted(state, plan_id, str(plan.instance_id), now)
    with state.transaction() as data:
        data["workers"].append(worker.as_dict())
        data["plans"][plan_id].update(status="applied", instance_id=instance.instance_id)
        data["plans"][plan_id]["applied_at"] = now.isoformat()
        return dict(data["plans"][plan_id])


def _deleted(state: ScaleState, plan_id: str, instance_id: str, now: datetime) -> dict[str, Any]:
    """Record a decommission's instance as deleted: the worker dropped, the plan applied."""
    with state.transaction() as data:
        data["workers"] = [w for w in data["workers"] if w["instance_id"] != instance_id]
        data["plans"][plan_id].update(status="applied", applied_at=now.isoformat())
        return dict(data["plans"][plan_id])


def _start_drain(
    state: ScaleState, plan_id: str, worker_id: str, now: datetime, wait_s: float
) -> dict[str, Any]:
    assert state.client is not None
    mark_draining(state.client, worker_id)
    until = (now + timedelta(seconds=wait_s)).isoformat()
    with state.transaction() as data:
        data["plans"][plan_id].update(status="draining", worker_id=worker_id, drain_until=until)
        return dict(data["plans"][plan_id])


def advance_drains(
    state: ScaleState,
    config_of: Callable[[str], TenantConfig],
    factory: AdapterFactory,
    now: datetime,
) -> list[dict[str, Any]]:
    """One look at every ``draining`` decommission, never a wait (decision 456).

    A worker that holds no tenant any more has its instance deleted (plan ``applied``); one
    still holding tenants past ``drain_until`` gets its mark cleared and serves on (plan
    ``failed``, nothing deleted); a refused delete fails the plan as :func:`apply_plan` does.

    Returns:
        The records of the plans that finished now (applied or failed).
    """
    client = state.client
    if client is None:
        return []
    plans = state.snapshot()["plans"].values()
    done: list[dict[str, Any]] = []
    for record in [dict(p) for p in plans if p.get("status") == "draining"]:
        plan_id, worker_id = str(record["plan_id"]), str(record["worker_id"])
        held = tenants_of(client, worker_id)
        try:
            if held:
                if now < datetime.fromisoformat(str(record["drain_until"])):
                    continue
                undrain(client, worker_id)
                raise ScaleError(
                    f"worker {worker_id} still holds {', '.join(held)} at the end of its "
                    "drain; the instance was not deleted",
                    "check that another worker is live (`nika scale workers`), then "
                    "decommission again",
                )
            config = config_of(str(record["tenant_id"]))
            factory(config, Provider(record["provider"])).delete(str(record["instance_id"]))
        except NikaError as exc:  # refused, drain timed out, or the tenant's config unreadable
            with state.transaction() as data:
                data["plans"][plan_id].update(status="failed", error=exc.message)
                done.append(dict(data["plans"][plan_id]))
            continue
        done.append(_deleted(state, plan_id, str(record["instance_id"]), now))
    return done


@dataclass
class ReconcileReport:
    """What a reconcile pass found."""

    tracked: list[dict[str, Any]] = field(default_factory=list)
    adopted: list[dict[str, Any]] = field(default_factory=list)
    orphans: list[dict[str, Any]] = field(default_factory=list)
    removed: list[dict[str, Any]] = field(default_factory=list)
    missing: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    """Instances whose provisioning failed: no longer tracked, so also in ``orphans``."""
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "tracked": self.tracked,
            "adopted": self.adopted,
            "orphans": self.orphans,
            "removed": self.removed,
            "missing": self.missing,
            "failed": self.failed,
            "errors": self.errors,
        }


def reconcile(
    configs: Iterable[TenantConfig],
    state: ScaleState,
    factory: AdapterFactory,
    remove: bool = False,
) -> ReconcileReport:
    """Compare every configured provider's nika-tagged instances with the tracked workers.

    An instance whose plan is ``applying`` is adopted (the create succeeded, the record did
    not); any other untracked one is an orphan, reported, and deleted when ``remove``. A
    tracked worker the provider no longer lists is reported as ``missing`` and dropped; one
    whose provisioning failed after the create returned (:data:`FAILED_STATES`) is dropped
    and handled as an orphan (``failed``; decision 503).
    """
    report = ReconcileReport()
    seen: set[tuple[str, str]] = set()
    listed: dict[tuple[str, str], tuple[TenantConfig, CloudProvider, Instance]] = {}
    for config in configs:
        for provider in config.providers:
            try:
                adapter = factory(config, provider)
                instances = adapter.list()
            except ProviderError as exc:
                report.errors.append(f"{config.tenant_id}/{provider.value}: {exc.message}")
                continue
            seen.add((config.tenant_id, provider.value))
            for inst in instances:
                listed.setdefault((provider.value, inst.instance_id), (config, adapter, inst))
    with state.transaction() as data:
        tracked = {(w["provider"], w["instance_id"]): w for w in data["workers"]}
        for key, (_config, adapter, inst) in sorted(listed.items()):
            failed = provisioning_failed(inst)
            if key in tracked and not failed:
                report.tracked.append(inst.as_dict())
                continue
            if failed:  # failed after the create returned: nothing serves on it, an orphan
                data["workers"] = [
                    w for w in data["workers"] if (w["provider"], w["instance_id"]) != key
                ]
                report.failed.append(inst.as_dict())
            plan = data["plans"].get(inst.plan_id or "")
            if plan is not None and plan.get("status") == "applying" and failed:
                plan.update(status="failed", error=f"{inst.provider.value}: provisioning failed")
            elif plan is not None and plan.get("status") == "applying":
                data["workers"].append(
                    Worker(
                        plan["tenant_id"],
                        inst.provider,
                        inst.instance_id,
                        plan["plan_id"],
                        str(plan["created_at"]),
                        float(plan.get("cost_per_hour_eur") or 0.0),
                    ).as_dict()
                )
                plan.update(status="applied", instance_id=inst.instance_id)
                report.adopted.append(inst.as_dict())
                continue
            report.orphans.append(inst.as_dict())
            if remove:
                try:
                    adapter.delete(inst.instance_id)
                    report.removed.append(inst.as_dict())
                except ProviderError as exc:
                    report.errors.append(f"{inst.provider.value}/{inst.instance_id}: {exc.message}")
        keep = []
        for worker in data["workers"]:
            key = (worker["provider"], worker["instance_id"])
            if (worker["tenant_id"], worker["provider"]) in seen and key not in listed:
                report.missing.append(worker)
            else:
                keep.append(worker)
        data["workers"] = keep
    return report
