"""An autonomous decommission never blocks the service loop (decision 456): the plan drains in
the background while every other tenant is served, and the leader deletes the instance once the
worker holds nothing, or fails the plan at the drain's deadline and deletes nothing."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import AutoMode, Provider, TenantConfig
from nika_tui.engine.context import EngineContext
from nika_tui.engine.leases import Leases
from nika_tui.engine.server.loop import MemoryService
from nika_tui.engine.worker import Worker
from nika_tui.engine.worker_keys import draining_key
from nika_tui.scale.actions import advance_drains, apply_plan, default_factory
from nika_tui.scale.drain import worker_id_for
from nika_tui.scale.planner import Plan, PlanKind
from nika_tui.scale.policy import act, open_plans
from nika_tui.scale.state import ScaleState
from nika_tui.services import redis_keys
from nika_tui.services.config_store import load_tenant, save_tenant
from nika_tui.services.embeddings import SentenceTransformerEmbedder
from nika_tui.services.memory_client import MemoryClient
from nika_tui.services.vectors.edge import EdgeVectorStore
from nika_tui.settings import Settings
from tests.helpers import retry_until
from tests.scale.conftest import scaleway_tenant
from tests.scale.fake_clouds import CloudState

NOW = datetime.now(UTC)


def _autonomous(clouds: tuple[str, CloudState]) -> TenantConfig:
    config = scaleway_tenant(clouds[0], AutoMode.AUTONOMOUS)
    save_tenant(config)
    return config


def _scaled_out(config: TenantConfig, state: ScaleState, now: datetime = NOW) -> str:
    """A worker created on the stand-in through the real apply path; its worker id."""
    plan = Plan("0123456789abcdef", config.tenant_id, PlanKind.SCALE_OUT, now.isoformat(), (),
                Provider.SCALEWAY, "PRO2-S", "fr-par-2", 0.11)  # fmt: skip
    state.save_plan(plan, "pending")
    apply_plan(plan.plan_id, config, state, default_factory(), now, Settings.from_env())
    return worker_id_for(plan.plan_id)


def _decommission_plan(config: TenantConfig, state: ScaleState, now: datetime = NOW) -> Plan:
    [worker] = state.workers(config.tenant_id)
    return Plan("decom", config.tenant_id, PlanKind.DECOMMISSION, now.isoformat(), ("calm",),
                worker.provider, instance_id=worker.instance_id)  # fmt: skip


def _instances(clouds: CloudState) -> int:
    return sum(len(v) for v in clouds.instances.values())


def test_a_background_drain_past_its_deadline_deletes_nothing(
    clouds: tuple[str, CloudState], scw_env: None, redis_client: redis.Redis
) -> None:
    config = _autonomous(clouds)
    state = ScaleState(client=redis_client)
    joined = _scaled_out(config, state)
    assert Leases(redis_client, joined, 60).acquire("tenant0") is not None  # nowhere to go
    out = act(_decommission_plan(config, state), config, state, default_factory(), redis_client,
              NOW, Settings.from_env())  # fmt: skip
    assert out["action"] == "draining"
    assert redis_client.exists(draining_key(joined))
    assert open_plans(state, "acme"), "no second plan beside a draining one"

    def config_of(tenant_id: str) -> TenantConfig:
        return load_tenant(tenant_id)

    before = advance_drains(state, config_of, default_factory(), NOW + timedelta(seconds=60))
    assert before == [] and state.plan("decom")["status"] == "draining"
    [failed] = advance_drains(state, config_of, default_factory(), NOW + timedelta(seconds=121))
    assert failed["status"] == "failed"
    assert f"worker {joined} still holds tenant0" in failed["error"]
    assert _instances(clouds[1]) == 1 and len(state.workers("acme")) == 1
    assert not redis_client.exists(draining_key(joined)), "it serves on"


@pytest.mark.slow
@pytest.mark.embedder
def test_the_service_serves_other_tenants_while_a_decommission_drains(
    clouds: tuple[str, CloudState],
    scw_env: None,
    redis_client: redis.Redis,
    redis_url: str,
    make_tenant: Callable[..., TenantConfig],
    embedder: SentenceTransformerEmbedder,
    tmp_path: Path,
) -> None:
    config = _autonomous(clouds)
    make_tenant("globex")
    state = ScaleState(client=redis_client)
    # The real leader checks the drain's deadline against the real clock: the plan starts
    # now, not when the module was imported (in a full run, 20 minutes earlier).
    now = datetime.now(UTC)
    joined = _scaled_out(config, state, now)
    # The worker on the instance still holds a tenant: its drain cannot end before it lets go.
    held = Leases(redis_client, joined, 600).acquire("tenant0")
    assert held is not None
    out = act(_decommission_plan(config, state, now), config, state, default_factory(),
              redis_client, now, Settings.from_env())  # fmt: skip
    assert out["action"] == "draining", "the autonomous path returned without waiting"

    # The real service loop, leading strategy B, with the drain in progress.
    own = redis.Redis.from_url(redis_url, decode_responses=True)
    store = EdgeVectorStore(tmp_path / "qdrant", 384, flush_writes=False)
    ctx = EngineContext(settings=Settings.from_env(), redis=own,
                        vectors=store, embedder=embedder)  # fmt: skip
    worker = Worker(own, "memory-service", tmp_path / "data", store, ttl_s=30)
    service = MemoryService(ctx, embed_ahead=False, worker=worker)
    thread = threading.Thread(target=service.run, daemon=True)
    thread.start()
    client = MemoryClient(redis.Redis.from_url(redis_url, decode_responses=True), timeout=30.0)
    try:
        retry_until(client.service_alive, timeout=60, what="service heartbeat")
        for i in range(3):
            meta = NikaMeta(timestamp=now, project_id="p")
            client.remember(RememberRequest(tenant_id="globex", text=f"globex fact {i}: port {i}",
                                            meta=meta))  # fmt: skip
        retry_until(
            lambda: int(redis_client.hget(redis_keys.metrics("globex"), "ingested") or 0) >= 3,
            timeout=60, interval=0.1, what="globex's memories stored during the drain",
        )  # fmt: skip
        stats = client.call("stats", {"tenant_id": "globex"})
        assert int(stats["tenants"]["globex"]["semantic"]["current"]) == 3
        # Served, and the drain still waits: the instance is there, the plan is draining.
        assert state.plan("decom")["status"] == "draining"
        assert _instances(clouds[1]) == 1

        Leases(redis_client, joined, 600).release(held)  # the worker let its tenant go
        retry_until(lambda: state.plan("decom")["status"] == "applied", timeout=60,
                    interval=0.1, what="the leader finished the decommission")  # fmt: skip
        assert _instances(clouds[1]) == 0 and state.workers("acme") == []
    finally:
        service.stop()
        thread.join(timeout=60)
        store.close()
        own.close()
