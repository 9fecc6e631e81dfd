"""Fixtures of the scale tests: the cloud stand-ins and a tenant configured to use them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nika_tui.domain.scale_config import DEFAULT_PROVIDER_SCALE, ScaleConfig
from nika_tui.domain.tenant import (
    AutoActions,
    AutoMode,
    Provider,
    ProviderConfig,
    SecretRef,
    SecretSource,
    TenantConfig,
)
from nika_tui.services.config_store import save_tenant
from tests.fake_providers import SCW
from tests.scale.fake_clouds import CloudState, fake_clouds


@pytest.fixture
def clouds() -> Iterator[tuple[str, CloudState]]:
    """The six APIs on 127.0.0.1."""
    with fake_clouds() as served:
        yield served


def scaleway_tenant(
    base_url: str, mode: AutoMode = AutoMode.ESCALATE, tenant_id: str = "acme", max_workers: int = 2
) -> TenantConfig:
    """A tenant whose only provider is Scaleway at ``base_url`` (keys in env vars)."""
    refs = {
        "access_key": SecretRef(source=SecretSource.ENV, name="SCW_ACCESS_KEY"),
        "secret_key": SecretRef(source=SecretSource.ENV, name="SCW_SECRET_KEY"),
    }
    shape = DEFAULT_PROVIDER_SCALE["scaleway"].model_copy(
        update={"base_url": base_url, "settings": {"project_id": "p-1"}}
    )
    return TenantConfig(
        tenant_id=tenant_id,
        display_name="Acme",
        providers={Provider.SCALEWAY: ProviderConfig(fields=refs)},
        auto_actions=AutoActions(scale=mode),
        scale=ScaleConfig(providers={"scaleway": shape}, max_workers=max_workers),
    )


@pytest.fixture
def scw_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scaleway keys in the environment (where the tenant's references point)."""
    monkeypatch.setenv("SCW_ACCESS_KEY", SCW["access_key"])
    monkeypatch.setenv("SCW_SECRET_KEY", SCW["secret_key"])


@pytest.fixture
def acme(clouds: tuple[str, CloudState], scw_env: None) -> TenantConfig:
    """Tenant ``acme`` saved, escalate mode, Scaleway at the stand-in."""
    config = scaleway_tenant(clouds[0])
    save_tenant(config)
    return config
