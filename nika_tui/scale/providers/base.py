"""What every provider adapter speaks: a worker spec in, tagged instances out.

Every instance nika creates carries three markers, so a reconcile pass can find any instance
the state file does not track: ``nika-managed=true``, ``nika-tenant={id}``, ``nika-plan={id}``.
Providers with key/value tags or labels (Scaleway, Azure, Google Cloud, AWS) carry them as tags;
Contabo and RunPod have no tag field on create, so the instance *name* carries them
(``nika-{tenant}--{plan}``, see :func:`worker_name` / :func:`parse_worker_name`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from nika_tui.domain.tenant import Provider

MANAGED_TAG = "nika-managed"
TENANT_TAG = "nika-tenant"
PLAN_TAG = "nika-plan"

_NAME = re.compile(r"^nika-(?P<tenant>[a-z0-9][a-z0-9-]{0,39})--(?P<plan>[a-z0-9]{1,32})$")


def worker_name(tenant_id: str, plan_id: str) -> str:
    """The instance name: ``nika-{tenant}--{plan}`` (valid for every provider's name rules)."""
    return f"nika-{tenant_id}--{plan_id}"


def parse_worker_name(name: str) -> tuple[str, str] | None:
    """``(tenant_id, plan_id)`` from a worker name, or ``None`` when nika did not name it."""
    match = _NAME.fullmatch(name)
    return (match["tenant"], match["plan"]) if match else None


def worker_tags(tenant_id: str, plan_id: str) -> dict[str, str]:
    """The three markers as key/value tags."""
    return {MANAGED_TAG: "true", TENANT_TAG: tenant_id, PLAN_TAG: plan_id}


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """One worker to create.

    Attributes:
        tenant_id: The tenant the worker serves.
        plan_id: The plan's id: idempotency key and tag (lowercase hex, ≤ 32).
        instance_type: The provider's type name (``DEV1-M``, ``Standard_D2s_v5``, ``t3.large``…).
        region: Zone / region / location in the provider's naming.
        image: Image id or name.
        user_data: The cloud-init document the instance boots with.
        settings: Non-secret provider ids (project, subscription, resource group, subnet…).
    """

    tenant_id: str
    plan_id: str
    instance_type: str
    region: str
    image: str
    user_data: str = ""
    settings: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The instance name (carries tenant and plan)."""
        return worker_name(self.tenant_id, self.plan_id)


@dataclass(frozen=True, slots=True)
class Instance:
    """An instance as the provider lists it (only nika-managed ones are returned)."""

    provider: Provider
    instance_id: str
    name: str
    tenant_id: str | None
    plan_id: str | None
    state: str

    def as_dict(self) -> dict[str, str | None]:
        """JSON-ready form."""
        return {
            "provider": self.provider.value,
            "instance_id": self.instance_id,
            "name": self.name,
            "tenant_id": self.tenant_id,
            "plan_id": self.plan_id,
            "state": self.state,
        }


#: An instance's state once its provisioning failed after the create had returned (ARM keeps the
#: VM with ``provisioningState: Failed``; Contabo reports ``error``): nothing serves on it, and
#: it may still bill, so reconcile stops tracking it and treats it as an orphan (decision 503).
FAILED_STATES: dict[Provider, frozenset[str]] = {
    Provider.AZURE: frozenset({"Failed"}),
    Provider.CONTABO: frozenset({"error"}),
}


def provisioning_failed(instance: Instance) -> bool:
    """True when the provider reports ``instance``'s provisioning as failed."""
    return instance.state in FAILED_STATES.get(instance.provider, frozenset())


def named_instance(
    provider: Provider, name: str, tags: Mapping[str, str], state: str
) -> Instance | None:
    """An instance whose id is its name (Azure, Google Cloud), read from its tags or labels.

    Returns:
        The instance with the tenant and plan its markers name, or ``None`` when it does not
        carry ``nika-managed=true`` (nika did not create it).
    """
    if tags.get(MANAGED_TAG) != "true":
        return None
    return Instance(provider, name, name, tags.get(TENANT_TAG), tags.get(PLAN_TAG), state)


class CloudProvider(Protocol):
    """The port every adapter implements."""

    provider: Provider

    def create(self, spec: WorkerSpec) -> Instance:
        """Create (and start) one worker; nothing is left behind when it fails.

        Raises:
            ProviderError: The provider refused (bad key, quota, region, rate limit).
        """

    def list(self) -> list[Instance]:
        """Every nika-managed instance of this account (any tenant)."""

    def delete(self, instance_id: str) -> None:
        """Delete one instance; an instance already gone is not an error."""
