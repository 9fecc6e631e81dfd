"""One scale leader per Redis: only it samples and plans; a takeover neither forgets a plan nor
applies an applied one again (decision 380). In process, then with two real `nika serve`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis

from nika_tui.domain.tenant import AutoMode
from nika_tui.engine.worker_keys import alive_key
from nika_tui.scale.indicators import Sample
from nika_tui.scale.leader import LEADER_KEY, ScaleLeader, leader_of
from nika_tui.scale.sampler import load_samples, store_sample
from nika_tui.scale.scheduler import ScaleScheduler
from nika_tui.scale.state import STATE_KEY, ScaleState
from nika_tui.services.config_store import save_tenant
from nika_tui.settings import Settings
from tests.helpers import retry_until
from tests.scale.conftest import scaleway_tenant
from tests.scale.fake_clouds import CloudState

WORKERS = ("wa", "wb")


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _saturated_acme(base_url: str, r: redis.Redis, mode: AutoMode = AutoMode.AUTONOMOUS) -> None:
    """Tenant acme on Scaleway; a sample a minute ago saw pod_ttfl far over 30 s (p95 over the
    last 30 min: saturated for whichever leader samples next)."""
    save_tenant(scaleway_tenant(base_url, mode))
    at = datetime.now(UTC) - timedelta(minutes=1)
    store_sample(r, Sample(at=at, cores=2, ttfl_s=(41.0, 42.0, 40.0)))


def _creates(clouds: CloudState) -> int:
    return sum(1 for m, path in clouds.requests if m == "POST" and path.endswith("/servers"))


def test_leader_lease_is_exclusive_renewed_and_taken_over(redis_client: redis.Redis) -> None:
    clock = Clock()
    a = ScaleLeader(redis_client, "wa", 3.0, clock)
    b = ScaleLeader(redis_client, "wb", 3.0, clock)
    assert a.lead() and not b.lead()
    assert leader_of(redis_client) == "wa"
    clock.t += 1.0  # past a quarter TTL: a renews, b still refused
    assert a.lead() and not b.lead()
    redis_client.delete(LEADER_KEY)  # a's lease lapsed (it died)
    assert b.lead() and leader_of(redis_client) == "wb"
    clock.t += 1.0
    assert not a.lead(), "a lapsed leader never renews over the new one"
    b.resign()
    assert leader_of(redis_client) is None and a.lead()


def test_two_schedulers_on_one_redis_only_the_leader_samples_and_plans(
    clouds: tuple[str, CloudState], scw_env: None, redis_client: redis.Redis
) -> None:
    _saturated_acme(clouds[0], redis_client)
    clock = Clock()
    first = ScaleScheduler(
        redis_client, Settings.from_env(), every_s=1, monotonic=clock, worker_id="wa"
    )
    second = ScaleScheduler(
        redis_client, Settings.from_env(), every_s=1, monotonic=clock, worker_id="wb"
    )
    assert first.tick() == ["scale_out:acme:applied"]
    for _ in range(3):
        clock.t += 1.1
        assert second.tick() == []
        assert first.tick() == []  # applied; the cooldown holds
    assert len(load_samples(redis_client)) == 1 + 4, "the follower took no sample"
    assert _creates(clouds[1]) == 1

    first.close()  # the leader stops: the other one leads at its next tick
    clock.t += 1.1
    assert second.tick() == []
    assert leader_of(redis_client) == "wb" and len(load_samples(redis_client)) == 1 + 5
    assert _creates(clouds[1]) == 1, "the new leader re-applied nothing"
    plans = ScaleState(client=redis_client).snapshot()["plans"]
    assert [p["status"] for p in plans.values()] == ["applied"]


def test_new_leader_keeps_an_escalated_plan_pending_instead_of_planning_again(
    clouds: tuple[str, CloudState], scw_env: None, redis_client: redis.Redis
) -> None:
    _saturated_acme(clouds[0], redis_client, AutoMode.ESCALATE)
    clock = Clock()
    first = ScaleScheduler(
        redis_client, Settings.from_env(), every_s=1, monotonic=clock, worker_id="wa"
    )
    assert first.tick() == ["scale_out:acme:confirmation"]
    redis_client.delete(LEADER_KEY)  # the leader died
    second = ScaleScheduler(
        redis_client, Settings.from_env(), every_s=1, monotonic=clock, worker_id="wb"
    )
    assert second.tick() == []
    [plan] = ScaleState(client=redis_client).snapshot()["plans"].values()
    assert plan["status"] == "pending" and _creates(clouds[1]) == 0


def test_file_state_is_imported_into_redis_once(tmp_path: Path, redis_client) -> None:
    path = ScaleState().path
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"plans": {"p1": {"tenant_id": "acme"}}, "workers": []}))
    shared = ScaleState(client=redis_client)
    with shared.transaction() as data:
        data["plans"]["p2"] = {"tenant_id": "acme"}
    assert sorted(json.loads(redis_client.get(STATE_KEY))["plans"]) == ["p1", "p2"]


def _serve(data: Path, log: Path, *join: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, NIKA_OS_DATA_DIR=str(data), NIKA_LEASE_TTL_S="3",
               NIKA_SCALE_EVERY_S="2", NIKA_KERNEL_WATCH_S="0")  # fmt: skip
    out = log.open("ab")
    return subprocess.Popen([sys.executable, "-m", "nika_tui", "serve", *join], stdout=out,
                            stderr=out, env=env)  # fmt: skip


def _sees_both(r: redis.Redis, worker_id: str) -> bool:
    raw = r.get(alive_key(worker_id))
    return bool(raw) and set(json.loads(str(raw))["sees"]) == set(WORKERS)


@pytest.mark.slow
@pytest.mark.embedder
def test_two_real_workers_one_leader_kill_9_takeover_reapplies_nothing(
    clouds: tuple[str, CloudState],
    scw_env: None,
    redis_client: redis.Redis,
    redis_url: str,
    tmp_path: Path,
) -> None:
    _saturated_acme(clouds[0], redis_client)
    logs = {w: tmp_path / f"{w}.log" for w in WORKERS}
    procs = {
        w: _serve(tmp_path / w, logs[w], "--join", redis_url, "--worker-id", w) for w in WORKERS
    }
    try:
        for w in procs:
            retry_until(lambda w=w: _sees_both(redis_client, w), timeout=180, interval=0.1,
                        what=f"{w} sees both workers")  # fmt: skip
        retry_until(lambda: _creates(clouds[1]) == 1, timeout=60, what="the leader scales out")
        leader = leader_of(redis_client)
        assert leader in procs
        follower = WORKERS[1] if leader == WORKERS[0] else WORKERS[0]
        seen = len(load_samples(redis_client))
        retry_until(lambda: len(load_samples(redis_client)) >= seen + 3, timeout=60,
                    what="three more leader ticks")  # fmt: skip
        assert leader_of(redis_client) == leader
        assert "now leads strategy B" not in logs[follower].read_text()
        assert _creates(clouds[1]) == 1

        procs[leader].send_signal(signal.SIGKILL)
        procs[leader].wait(timeout=30)
        retry_until(lambda: leader_of(redis_client) == follower, timeout=60,
                    what="the survivor takes the scale leadership over")  # fmt: skip
        seen = len(load_samples(redis_client))
        retry_until(lambda: len(load_samples(redis_client)) >= seen + 2, timeout=60,
                    what="the new leader samples and plans")  # fmt: skip
        assert "now leads strategy B" in logs[follower].read_text()
        assert _creates(clouds[1]) == 1, "the applied plan was not applied again"
        plans = ScaleState(client=redis_client).snapshot()["plans"]
        assert [p["status"] for p in plans.values()] == ["applied"]
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs.values():
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
