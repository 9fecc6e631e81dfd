"""What the scale tests share: each provider's test credentials and shapes, a scale-out plan,
a real ingest backlog, a hand-moved clock and ``nika scale`` in a child process."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import redis

from nika_tui.domain.scale_config import DEFAULT_PROVIDER_SCALE, ProviderScale
from nika_tui.domain.tenant import Provider, TenantConfig
from nika_tui.scale.indicators import Indicator, Reading, Sample
from nika_tui.scale.planner import Plan, make_plan
from nika_tui.scale.providers.base import CloudProvider, WorkerSpec
from nika_tui.scale.sampler import store_sample
from nika_tui.scale.state import ScaleState
from nika_tui.services import redis_keys
from tests.fake_providers import AWS, AZ, CNTB, GCP, RUNPOD, SCW
from tests.scale.fake_clouds import CloudState

SECRETS: dict[Provider, dict[str, str]] = {
    Provider.SCALEWAY: SCW,
    Provider.CONTABO: CNTB,
    Provider.AZURE: AZ,
    Provider.GCP: GCP,
    Provider.AWS: AWS,
    Provider.RUNPOD: RUNPOD,
}
SETTINGS = {
    Provider.SCALEWAY: {"project_id": "11111111-2222-4333-8444-555555555555"},
    Provider.AZURE: {
        "subscription_id": "sub-1",
        "resource_group": "nika",
        "subnet_id": "/subscriptions/sub-1/resourceGroups/nika/providers/"
        "Microsoft.Network/virtualNetworks/v/subnets/default",
    },
}
#: The path (regex) of each provider's create request, for fault injection.
CREATE = {
    Provider.SCALEWAY: ("POST", r"/servers$"),
    Provider.CONTABO: ("POST", r"^/v1/compute/instances$"),
    Provider.AZURE: ("PUT", r"/virtualMachines/"),
    Provider.GCP: ("POST", r"/instances$"),
    Provider.AWS: ("POST", r"^/$"),
    Provider.RUNPOD: ("POST", r"^/v1/pods$"),
}
ALL = list(Provider)


Make = Callable[..., CloudProvider]


def shape(provider: Provider, **over: Any) -> ProviderScale:
    """The provider's default shape with the test settings, ``over`` applied."""
    base = DEFAULT_PROVIDER_SCALE[provider.value]
    return base.model_copy(update={"settings": SETTINGS.get(provider, {}), **over})


def spec(provider: Provider, plan: str = "0123abcd", **over: Any) -> WorkerSpec:
    """A worker spec of tenant ``acme`` for ``plan`` on that shape."""
    made = shape(provider, **over)
    return WorkerSpec(
        "acme", plan, made.instance_type, made.region, made.image, "#cloud-config\n", {}
    )


def live(state: CloudState, provider: Provider) -> list[dict[str, Any]]:
    """The stand-in's instances of ``provider`` that are not terminated or cancelled."""
    items = state.instances[provider.value].values()
    return [i for i in items if i.get("state") != "terminated" and not i.get("cancelDate")]


NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
HOT = [Reading(Indicator.QUEUE, 120.0, 50.0, 600, True, "scale")]


def plan_for(config: TenantConfig, plan_id: str = "feedbeef") -> Plan:
    """A scale-out plan of ``config`` on the ``HOT`` readings."""
    return make_plan(config, HOT, False, ScaleState().workers(config.tenant_id), NOW, plan_id)


def saturate(client: redis.Redis, now: datetime, depth: int = 80) -> None:
    """A real ingest backlog of ``depth`` entries, and 11 minutes of samples that saw it."""
    for n in range(depth):
        client.xadd(redis_keys.INGEST_STREAM, {"req": json.dumps({"n": n})})
    for minutes in range(11, 0, -1):
        store_sample(
            client, Sample(at=now - timedelta(minutes=minutes), cores=2, queue_depth=depth)
        )


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def nika_scale(*args: str) -> subprocess.CompletedProcess[str]:
    """``nika scale ARGS --json`` in a child process."""
    return subprocess.run(
        [sys.executable, "-m", "nika_tui", "scale", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
