"""Build a provider adapter from a tenant's config and its secret store (never a command line).

``base_url`` (per provider, in the tenant's ``scale.providers`` entry, or the argument) is the
only thing that changes between the real API and a local stand-in.
"""

from __future__ import annotations

from collections.abc import Mapping

from nika_tui.domain.provider_formats import PROVIDER_FIELDS, PROVIDER_LABELS
from nika_tui.domain.scale_config import ProviderScale
from nika_tui.domain.tenant import Provider, TenantConfig
from nika_tui.errors import ProviderError
from nika_tui.scale.providers.aws import Ec2
from nika_tui.scale.providers.azure import Azure
from nika_tui.scale.providers.base import CloudProvider
from nika_tui.scale.providers.contabo import Contabo
from nika_tui.scale.providers.gcp import GoogleCompute
from nika_tui.scale.providers.runpod import RunPod
from nika_tui.scale.providers.scaleway import Scaleway
from nika_tui.services.secrets import SecretStore


def provider_secrets(
    config: TenantConfig, provider: Provider, store: SecretStore
) -> dict[str, str]:
    """Every credential field of ``provider`` for this tenant, resolved from the secret store.

    Raises:
        ProviderError: The provider is not configured or a field has no value anywhere.
    """
    label = PROVIDER_LABELS[provider]
    entry = config.providers.get(provider)
    if entry is None:
        raise ProviderError(
            f"{label} is not configured for tenant {config.tenant_id}",
            f"add it with `nika setup providers --tenant {config.tenant_id}`",
            "auth",
        )
    values: dict[str, str] = {}
    for spec in PROVIDER_FIELDS[provider]:
        value = store.get(provider, spec.name, entry.fields.get(spec.name))
        if not value:
            raise ProviderError(
                f"{label}: no value for {spec.name} (env {spec.env_var}, keyring or file)",
                f"set {spec.env_var} or run `nika setup providers --tenant {config.tenant_id}`",
                "auth",
            )
        values[spec.name] = value
    return values


def _need(shape: ProviderScale, provider: Provider, *keys: str) -> Mapping[str, str]:
    missing = [k for k in keys if not shape.settings.get(k)]
    if missing:
        raise ProviderError(
            f"{PROVIDER_LABELS[provider]}: scale settings lack {', '.join(missing)}",
            f"set scale.providers.{provider.value}.settings.{missing[0]} in the tenant config",
            "config",
        )
    return shape.settings


def build_provider(
    provider: Provider,
    secrets: Mapping[str, str],
    shape: ProviderScale,
    base_url: str | None = None,
) -> CloudProvider:
    """The adapter for ``provider`` with the tenant's shape; ``base_url`` overrides the API."""
    base = base_url or shape.base_url
    if provider is Provider.SCALEWAY:
        s = _need(shape, provider, "project_id")
        if base:
            return Scaleway(secrets, shape.region, s["project_id"], base_url=base)
        return Scaleway(secrets, shape.region, s["project_id"])
    if provider is Provider.CONTABO:
        return Contabo(secrets, base_url=base) if base else Contabo(secrets)
    if provider is Provider.AZURE:
        s = _need(shape, provider, "subscription_id", "resource_group", "subnet_id")
        args = (secrets, s["subscription_id"], s["resource_group"], s["subnet_id"])
        return Azure(*args, base_url=base) if base else Azure(*args)
    if provider is Provider.GCP:
        return (
            GoogleCompute(secrets, shape.region, base_url=base)
            if base
            else GoogleCompute(secrets, shape.region)
        )
    if provider is Provider.AWS:
        return Ec2(secrets, shape.region, base_url=base)
    return RunPod(secrets, base_url=base) if base else RunPod(secrets)
