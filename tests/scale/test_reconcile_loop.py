"""The service's own reconcile pass, against the Scaleway stand-in on 127.0.0.1 and real Redis."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import redis

from nika_tui.domain.tenant import AutoMode, TenantConfig
from nika_tui.engine.kernels.confirmations import list_confirmations, resolve
from nika_tui.errors import ScaleError
from nika_tui.scale.actions import default_factory
from nika_tui.scale.providers.base import Instance, WorkerSpec
from nika_tui.scale.reconcile_loop import LEASE_KEY, ORPHAN_KIND, ReconcileScheduler
from nika_tui.scale.state import ScaleState, Worker
from nika_tui.services.bus import open_bus
from nika_tui.services.config_store import save_tenant
from nika_tui.settings import Settings
from tests.helpers import retry_until
from tests.plugins.memory import RunningService
from tests.scale.conftest import scaleway_tenant
from tests.scale.fake_clouds import CloudState

NOW = datetime(2026, 12, 4, 4, 0, tzinfo=UTC)
EVERY_S = 600.0


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _stray(config: TenantConfig, plan_id: str = "0rphan") -> Instance:
    """A nika-tagged instance no worker record tracks (a create whose record was lost)."""
    adapter = default_factory()(config, next(iter(config.providers)))
    return adapter.create(WorkerSpec(config.tenant_id, plan_id, "PRO2-S", "fr-par-2", "ubuntu"))


def _scheduler(
    client: redis.Redis, clock: Clock, owner: str = "memory-service"
) -> ReconcileScheduler:
    return ReconcileScheduler(
        client, owner, Settings.from_env().roots, every_s=EVERY_S, first_s=60.0, monotonic=clock
    )


def _server_ids(cloud: CloudState) -> list[str]:
    return [str(s["id"]) for s in cloud.instances["scaleway"].values()]


def _orphan_items(client: redis.Redis, tenant: str = "acme") -> list[dict]:
    return [c for c in list_confirmations(client, tenant) if c["kind"] == ORPHAN_KIND]


def test_escalate_asks_once_and_approving_removes_the_orphan(
    acme: TenantConfig, clouds: tuple[str, CloudState], redis_client: redis.Redis
) -> None:
    _, cloud = clouds
    stray = _stray(acme)
    clock = Clock()
    loop = _scheduler(redis_client, clock)
    assert loop.tick(NOW) == []  # not in the first minute after the start
    clock.t += 60
    label = f"scaleway/{stray.instance_id}"
    assert loop.tick(NOW) == [f"orphan:acme:{label}:asked"]
    [item] = _orphan_items(redis_client)
    assert item["status"] == "pending"
    assert (item["provider"], item["instance_id"]) == ("scaleway", stray.instance_id)
    assert "scaleway" in item["title"] and "remove it?" in item["title"]
    assert _server_ids(cloud) == [stray.instance_id]  # escalate never deletes on its own
    events = [line.data for line in open_bus("acme").read(NOW.date()) if line.data]
    assert any(e.get("kind") == "scale.orphan" for e in events)

    clock.t += EVERY_S
    assert loop.tick(NOW) == [f"orphan:acme:{label}:pending"]
    assert len(_orphan_items(redis_client)) == 1  # asked once while the question is open

    out = resolve(
        redis_client, "acme", item["id"], approve=True, settings=Settings.from_env(), now=NOW
    )
    assert out["status"] == "approved"
    assert _server_ids(cloud) == []


def test_autonomous_removes_the_orphan_and_keeps_tracked_workers(
    clouds: tuple[str, CloudState], scw_env: None, redis_client: redis.Redis
) -> None:
    base, cloud = clouds
    config = scaleway_tenant(base, AutoMode.AUTONOMOUS)
    save_tenant(config)
    stray = _stray(config)
    kept = _stray(config, "abc123")
    with ScaleState(
        client=redis_client
    ).transaction() as data:  # a worker nika tracks: never touched
        data["workers"].append(
            Worker(
                "acme", kept.provider, kept.instance_id, "abc123", NOW.isoformat(), 0.1
            ).as_dict()
        )
    clock = Clock()
    loop = _scheduler(redis_client, clock)
    clock.t += 60
    done = loop.tick(NOW)
    assert done == [f"orphan:acme:scaleway/{stray.instance_id}:removed"]
    assert _server_ids(cloud) == [kept.instance_id]
    assert _orphan_items(redis_client) == []
    events = [line.data for line in open_bus("acme").read(NOW.date()) if line.data]
    assert [
        e["body"]["instance_id"] for e in events if e.get("kind") == "scale.orphan_removed"
    ] == [stray.instance_id]


def test_off_reports_as_an_attention_item_without_removing(
    clouds: tuple[str, CloudState], scw_env: None, redis_client: redis.Redis
) -> None:
    base, cloud = clouds
    config = scaleway_tenant(base, AutoMode.OFF)
    save_tenant(config)
    stray = _stray(config)
    clock = Clock()
    loop = _scheduler(redis_client, clock)
    clock.t += 60
    assert loop.tick(NOW) == [f"orphan:acme:scaleway/{stray.instance_id}:asked"]
    assert len(_orphan_items(redis_client)) == 1
    assert _server_ids(cloud) == [stray.instance_id]


def test_one_lease_holder_reconciles_and_another_takes_over_when_it_lapses(
    acme: TenantConfig, clouds: tuple[str, CloudState], redis_client: redis.Redis
) -> None:
    stray = _stray(acme)
    clock = Clock()
    first, second = _scheduler(redis_client, clock, "w1"), _scheduler(redis_client, clock, "w2")
    clock.t += 60
    assert first.tick(NOW) == [f"orphan:acme:scaleway/{stray.instance_id}:asked"]
    assert second.tick(NOW) == []  # the lease is w1's: w2 lists nothing
    assert str(redis_client.get(LEASE_KEY)).startswith("w1:")
    assert 0 < redis_client.pttl(LEASE_KEY) <= 3 * EVERY_S * 1000
    clock.t += EVERY_S
    assert second.tick(NOW) == []  # still w1's (it renews on its own passes)
    redis_client.delete(LEASE_KEY)  # w1 died: its lease lapsed
    clock.t += EVERY_S
    assert second.tick(NOW) == [f"orphan:acme:scaleway/{stray.instance_id}:pending"]
    assert str(redis_client.get(LEASE_KEY)).startswith("w2:")


def test_approving_an_orphan_that_was_adopted_meanwhile_removes_nothing(
    acme: TenantConfig, clouds: tuple[str, CloudState], redis_client: redis.Redis
) -> None:
    _, cloud = clouds
    stray = _stray(acme)
    clock = Clock()
    loop = _scheduler(redis_client, clock)
    clock.t += 60
    loop.tick(NOW)
    [item] = _orphan_items(redis_client)
    with ScaleState(client=redis_client).transaction() as data:
        data["workers"].append(
            Worker(
                "acme", stray.provider, stray.instance_id, "0rphan", NOW.isoformat(), 0.1
            ).as_dict()
        )
    with pytest.raises(ScaleError, match="tracked worker"):
        resolve(
            redis_client, "acme", item["id"], approve=True, settings=Settings.from_env(), now=NOW
        )
    assert _server_ids(cloud) == [stray.instance_id]


@pytest.fixture
def fast_reconcile(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pass every 0.2 s (set before the service's settings are read)."""
    monkeypatch.setenv("NIKA_SCALE_RECONCILE_S", "0.2")


@pytest.mark.embedder
def test_the_running_service_reconciles_by_itself(
    fast_reconcile: None,
    acme: TenantConfig,
    clouds: tuple[str, CloudState],
    running_service: RunningService,
    redis_client: redis.Redis,
) -> None:
    stray = _stray(acme)
    [item] = retry_until(
        lambda: _orphan_items(redis_client) or None, timeout=30, what="the orphan asked about"
    )
    assert item["instance_id"] == stray.instance_id
    assert str(redis_client.get(LEASE_KEY)).startswith(running_service.service.consumer)
