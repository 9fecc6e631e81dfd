"""A scale plan is applied once, even when two applies (or an apply and the scheduler) race.

The stand-in holds the provider's create request until the test releases it, so the second
apply runs exactly while the first is inside the provider call: it must be refused, and only
one server may exist at the end.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from typing import Any

import pytest
import redis

from nika_tui.domain.tenant import AutoMode, TenantConfig
from nika_tui.errors import ScaleError
from nika_tui.scale.actions import apply_plan, default_factory
from nika_tui.scale.scheduler import ScaleScheduler
from nika_tui.scale.state import ScaleState
from nika_tui.services.config_store import save_tenant
from nika_tui.settings import Settings
from tests.scale.conftest import scaleway_tenant
from tests.scale.fake_clouds import CloudState
from tests.scale.support import NOW, Clock, nika_scale, plan_for, saturate

CREATE = ("POST", r"/servers$")
WAIT_S = 30.0


def _creates(cloud: CloudState) -> int:
    return sum(1 for m, p in cloud.requests if m == "POST" and p.endswith("/servers"))


def test_an_apply_while_the_plan_is_being_created_is_refused(
    acme: TenantConfig, clouds: tuple[str, CloudState], redis_client: redis.Redis
) -> None:
    _, cloud = clouds
    state = ScaleState(client=redis_client)
    plan = plan_for(acme)
    state.save_plan(plan, "pending")
    held = cloud.hold(*CREATE)
    first: dict[str, Any] = {}
    runner = threading.Thread(
        target=lambda: first.update(
            apply_plan(plan.plan_id, acme, state, default_factory(), NOW, Settings.from_env())
        )
    )
    runner.start()
    try:
        assert held.arrived.wait(WAIT_S), "the first apply never reached the provider"
        with pytest.raises(ScaleError, match="already applied"):
            apply_plan(plan.plan_id, acme, state, default_factory(), NOW, Settings.from_env())
        assert state.plan(plan.plan_id)["status"] == "applying"
    finally:
        held.release.set()
        runner.join(WAIT_S)
    assert first["status"] == "applied"
    assert _creates(cloud) == 1 and len(cloud.instances["scaleway"]) == 1
    assert [w.plan_id for w in state.workers("acme")] == [plan.plan_id]


@pytest.mark.parametrize("shared", [True, False], ids=["redis-state", "file-state"])
def test_simultaneous_applies_of_one_plan_create_one_server(
    acme: TenantConfig, clouds: tuple[str, CloudState], redis_client: redis.Redis, shared: bool
) -> None:
    _, cloud = clouds
    state = ScaleState(client=redis_client if shared else None)
    plan = plan_for(acme)
    state.save_plan(plan, "pending")
    start = threading.Barrier(6)
    outcomes: list[str] = []

    def one() -> None:
        mine = ScaleState(client=redis_client if shared else None)  # as another process would
        start.wait(WAIT_S)
        try:
            outcomes.append(
                apply_plan(plan.plan_id, acme, mine, default_factory(), NOW, Settings.from_env())[
                    "status"
                ]
            )
        except ScaleError as exc:
            outcomes.append("refused" if "already applied" in exc.message else exc.message)

    threads = [threading.Thread(target=one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert sorted(outcomes) == ["applied"] + ["refused"] * 5
    assert _creates(cloud) == 1 and len(cloud.instances["scaleway"]) == 1
    assert len(state.workers("acme")) == 1


def test_a_cli_apply_racing_the_scheduler_is_refused(
    clouds: tuple[str, CloudState], scw_env: None, redis_client: redis.Redis
) -> None:
    """The scheduler applies its own plan (autonomous); `nika scale apply` of that plan, run
    while the scheduler is inside the provider's create, does nothing."""
    base, cloud = clouds
    save_tenant(scaleway_tenant(base, AutoMode.AUTONOMOUS))
    now = datetime.now(UTC)
    saturate(redis_client, now)
    held = cloud.hold(*CREATE)
    done: list[str] = []
    scheduler = ScaleScheduler(redis_client, Settings.from_env(), monotonic=Clock())
    runner = threading.Thread(target=lambda: done.extend(scheduler.tick(now)))
    runner.start()
    try:
        assert held.arrived.wait(WAIT_S), "the scheduler never reached the provider"
        [(plan_id, record)] = ScaleState(client=redis_client).snapshot()["plans"].items()
        assert record["status"] == "applying"
        again = nika_scale("apply", plan_id, "--tenant", "acme")
        assert again.returncode == 1, again.stdout
        assert "already applied" in json.loads(again.stderr)["error"]
    finally:
        held.release.set()
        runner.join(WAIT_S)
    assert done == ["scale_out:acme:applied"]
    assert _creates(cloud) == 1 and len(cloud.instances["scaleway"]) == 1


def test_a_cli_plan_beside_the_schedulers_open_plan_is_that_plan(
    acme: TenantConfig, clouds: tuple[str, CloudState], redis_client: redis.Redis
) -> None:
    """Decision 502: one open plan per tenant, so one saturation is one scale-out."""
    now = datetime.now(UTC)
    saturate(redis_client, now)
    assert ScaleScheduler(redis_client, Settings.from_env(), monotonic=Clock()).tick(now) == [
        "scale_out:acme:confirmation"
    ]
    [pending] = ScaleState(client=redis_client).snapshot()["plans"]
    out = nika_scale("plan", "--tenant", "acme")
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    assert shown["plan_id"] == pending and shown["already_open"] is True
    assert shown["status"] == "pending" and shown["kind"] == "scale_out"
    assert list(ScaleState(client=redis_client).snapshot()["plans"]) == [pending]


def test_the_service_acts_on_no_plan_beside_a_persons_open_one(
    acme: TenantConfig, clouds: tuple[str, CloudState], redis_client: redis.Redis
) -> None:
    from nika_tui.engine.kernels.confirmations import list_confirmations
    from nika_tui.scale.policy import act

    state = ScaleState(client=redis_client)
    mine = plan_for(acme, "aaaa")
    assert state.save_plan_unless_open(mine, "pending") is None
    out = act(
        plan_for(acme, "bbbb"),
        acme,
        state,
        default_factory(),
        redis_client,
        NOW,
        Settings.from_env(),
    )
    assert out["action"] == "none" and out["open_plan"] == "aaaa"
    assert list(state.snapshot()["plans"]) == ["aaaa"]
    assert list_confirmations(redis_client, "acme") == []


@pytest.mark.parametrize("shared", [True, False], ids=["redis-state", "file-state"])
def test_simultaneous_plans_of_one_tenant_record_one(
    acme: TenantConfig, redis_client: redis.Redis, shared: bool
) -> None:
    start = threading.Barrier(6)
    others: list[str | None] = []

    def one(n: int) -> None:
        state = ScaleState(client=redis_client if shared else None)
        plan = plan_for(acme, f"p{n}")
        start.wait(WAIT_S)
        other = state.save_plan_unless_open(plan, "pending")
        others.append(None if other is None else other["plan_id"])

    threads = [threading.Thread(target=one, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    [recorded] = ScaleState(client=redis_client if shared else None).snapshot()["plans"]
    assert sorted(others, key=str) == [None] + [recorded] * 5
