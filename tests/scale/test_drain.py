"""Scale-out moves tenants to the new worker; decommission drains it before the delete
(decision 381). Two real `nika serve` workers on one embedded Redis, and a drain that times out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import Provider, TenantConfig
from nika_tui.engine.leases import Leases
from nika_tui.engine.worker_keys import PRIMARY_ID, alive_key, draining_key
from nika_tui.errors import ScaleError
from nika_tui.scale import cloud_init
from nika_tui.scale.actions import apply_plan, default_factory
from nika_tui.scale.drain import tenants_of, worker_id_for
from nika_tui.scale.planner import Plan, PlanKind
from nika_tui.scale.state import ScaleState
from nika_tui.services.memory_client import MemoryClient
from nika_tui.settings import Settings
from tests.helpers import retry_until
from tests.scale.fake_clouds import CloudState

NOW = datetime(2026, 12, 4, tzinfo=UTC)
TENANTS = [f"tenant{i}" for i in range(4)]
PER_TENANT = 15


def _scale_out(config: TenantConfig, state: ScaleState) -> str:
    """A worker created on the stand-in through the real apply path; its plan id."""
    plan = Plan("0123456789abcdef", config.tenant_id, PlanKind.SCALE_OUT, NOW.isoformat(), (),
                Provider.SCALEWAY, "PRO2-S", "fr-par-2", 0.11)  # fmt: skip
    state.save_plan(plan, "pending")
    apply_plan(plan.plan_id, config, state, default_factory(), NOW, Settings.from_env())
    return plan.plan_id


def _decommission(config: TenantConfig, state: ScaleState, wait_s: float) -> dict:
    [worker] = state.workers(config.tenant_id)
    plan = Plan("decom", config.tenant_id, PlanKind.DECOMMISSION, NOW.isoformat(), (),
                worker.provider, instance_id=worker.instance_id)  # fmt: skip
    state.save_plan(plan, "pending")
    return apply_plan(
        "decom", config, state, default_factory(), NOW, Settings.from_env(), drain_wait_s=wait_s
    )


def _instances(clouds: CloudState) -> int:
    return sum(len(v) for v in clouds.instances.values())


def test_a_drain_that_does_not_finish_deletes_nothing(
    acme: TenantConfig, clouds: tuple[str, CloudState], redis_client: redis.Redis
) -> None:
    state = ScaleState(client=redis_client)
    joined = worker_id_for(_scale_out(acme, state))
    # The worker holds a tenant and no other worker is there to take it.
    assert Leases(redis_client, joined, 60).acquire("tenant0") is not None
    with pytest.raises(ScaleError, match=f"worker {joined} still holds tenant0") as err:
        _decommission(acme, state, wait_s=1)
    assert "not deleted" in err.value.message
    assert _instances(clouds[1]) == 1 and len(state.workers("acme")) == 1
    assert state.plan("decom")["status"] == "failed"
    assert not redis_client.exists(draining_key(joined)), "it serves on"


def test_the_instance_boots_as_the_worker_a_decommission_drains() -> None:
    doc = cloud_init.render("acme", "redis://u:hunter2@10.0.0.2:6379/0", "1.0", "nika-0123")
    assert '"serve" "--join" "redis://u@10.0.0.2:6379/0" "--worker-id" "nika-0123"' in doc
    assert "hunter2" not in doc


def _serve(data: Path, log: Path, *join: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, NIKA_OS_DATA_DIR=str(data), NIKA_LEASE_TTL_S="3",
               NIKA_KERNEL_WATCH_S="0")  # fmt: skip
    out = log.open("ab")
    return subprocess.Popen([sys.executable, "-m", "nika_tui", "serve", *join], stdout=out,
                            stderr=out, env=env)  # fmt: skip


def _sees(r: redis.Redis, worker_id: str, workers: set[str]) -> bool:
    raw = r.get(alive_key(worker_id))
    return bool(raw) and set(json.loads(str(raw))["sees"]) == workers


def _counts(client: MemoryClient) -> dict[str, int]:
    out = {}
    for t in TENANTS:
        stats = client.call("stats", {"tenant_id": t})
        out[t] = int(stats["tenants"][t]["semantic"]["current"])
    return out


@pytest.mark.slow
@pytest.mark.embedder
def test_scale_out_rebalances_and_decommission_drains_before_delete(
    acme: TenantConfig,
    clouds: tuple[str, CloudState],
    redis_client: redis.Redis,
    redis_url: str,
    make_tenant: Callable[..., TenantConfig],
    tmp_path: Path,
) -> None:
    for t in TENANTS:
        make_tenant(t)
    state = ScaleState(client=redis_client)
    log = tmp_path / "workers.log"
    primary = _serve(tmp_path / "a", log)
    joined_proc: subprocess.Popen[bytes] | None = None
    try:
        retry_until(lambda: _sees(redis_client, PRIMARY_ID, {PRIMARY_ID}), timeout=180,
                    interval=0.1, what="the primary is live")  # fmt: skip
        client = MemoryClient(redis_client, timeout=60)
        for i in range(PER_TENANT):
            for t in TENANTS:
                meta = NikaMeta(timestamp=NOW, project_id="p")
                client.remember(RememberRequest(tenant_id=t, text=f"{t} fact {i}: port {i}",
                                                meta=meta))  # fmt: skip
        retry_until(lambda: _counts(client) == dict.fromkeys(TENANTS, PER_TENANT), timeout=120,
                    interval=0.2, what="the primary stored every memory")  # fmt: skip
        assert tenants_of(redis_client, PRIMARY_ID) == TENANTS

        # Scale-out: the new worker joins (as cloud-init starts it) and gets its share.
        joined = worker_id_for(_scale_out(acme, state))
        joined_proc = _serve(tmp_path / "b", log, "--join", redis_url, "--worker-id", joined)
        retry_until(lambda: len(tenants_of(redis_client, joined)) == 2, timeout=180,
                    interval=0.2, what="two tenants moved to the new worker")  # fmt: skip
        retry_until(lambda: len(tenants_of(redis_client, PRIMARY_ID)) == 2, timeout=60,
                    what="the primary keeps two")  # fmt: skip
        assert _counts(client) == dict.fromkeys(TENANTS, PER_TENANT), "no loss, no duplicate"

        # Decommission: the worker hands its tenants back, then the instance is deleted.
        record = _decommission(acme, state, wait_s=120)
        assert record["status"] == "applied"
        assert tenants_of(redis_client, joined) == []
        assert _instances(clouds[1]) == 0 and state.workers("acme") == []
        retry_until(lambda: tenants_of(redis_client, PRIMARY_ID) == TENANTS, timeout=60,
                    what="the primary holds every tenant again")  # fmt: skip
        assert _counts(client) == dict.fromkeys(TENANTS, PER_TENANT), "no loss, no duplicate"
    finally:
        for proc in (primary, joined_proc):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in (primary, joined_proc):
            if proc is None:
                continue
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
