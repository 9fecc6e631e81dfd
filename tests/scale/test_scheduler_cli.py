"""The service's scale scheduler on real samples and Redis, and the `nika scale` CLI end to end."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from nika_tui.domain.tenant import TenantConfig
from nika_tui.engine.kernels.confirmations import list_confirmations
from nika_tui.scale.indicators import Sample
from nika_tui.scale.sampler import load_samples, new_head, store_sample
from nika_tui.scale.scheduler import ScaleScheduler
from nika_tui.settings import Settings
from tests.scale.support import Clock, nika_scale, saturate


def test_scheduler_escalates_one_plan_on_a_real_backlog(acme: TenantConfig, redis_client) -> None:
    now = datetime.now(UTC)
    saturate(redis_client, now)
    clock = Clock()
    scheduler = ScaleScheduler(redis_client, Settings.from_env(), monotonic=clock)
    done = scheduler.tick(now)
    assert done == ["scale_out:acme:confirmation"]
    latest = load_samples(redis_client)[-1]
    assert latest.queue_depth == 80 and latest.ram_percent is not None
    [item] = list_confirmations(redis_client, "acme")
    assert "scaleway" in item["title"] and "EUR/h" in item["title"]
    clock.t += 61
    assert scheduler.tick(now + timedelta(seconds=61)) == []  # a plan is pending: no second one
    assert len(list_confirmations(redis_client, "acme")) == 1


def test_scheduler_does_nothing_without_saturation(acme: TenantConfig, redis_client) -> None:
    scheduler = ScaleScheduler(redis_client, Settings.from_env())
    assert scheduler.tick(datetime.now(UTC)) == []
    assert list_confirmations(redis_client, "acme") == []


def test_new_head_finds_values_pushed_since_the_last_read() -> None:
    assert new_head([3.0, 2.0, 1.0], [5.0, 4.0, 3.0, 2.0, 1.0]) == [5.0, 4.0]
    assert new_head([3.0, 2.0], [3.0, 2.0]) == []
    assert new_head([], [1.0]) == [1.0]


def test_cli_plan_apply_once_status_reconcile(acme: TenantConfig, clouds, redis_client) -> None:
    saturate(redis_client, datetime.now(UTC))
    store_sample(redis_client, Sample(at=datetime.now(UTC), cores=2, queue_depth=80))
    out = nika_scale("plan", "--tenant", "acme")
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    assert plan["kind"] == "scale_out" and plan["provider"] == "scaleway"
    applied = nika_scale("apply", plan["plan_id"], "--tenant", "acme")
    assert applied.returncode == 0, applied.stderr
    assert json.loads(applied.stdout)["status"] == "applied"
    again = nika_scale("apply", plan["plan_id"], "--tenant", "acme")
    assert again.returncode == 1
    assert "already applied" in json.loads(again.stderr)["error"]
    assert len(clouds[1].instances["scaleway"]) == 1
    status = json.loads(nika_scale("status", "--tenant", "acme").stdout)
    assert status["leader"] is None  # no service runs: nobody leads
    assert [w["plan_id"] for w in status["tenants"]["acme"]["workers"]] == [plan["plan_id"]]
    assert {r["indicator"]: r["saturated"] for r in status["indicators"]}["queue"] is True
    report = json.loads(nika_scale("reconcile").stdout)
    assert len(report["tracked"]) == 1 and report["orphans"] == []
    gone = nika_scale("decommission", "--tenant", "acme")
    assert gone.returncode == 0, gone.stderr
    assert clouds[1].instances["scaleway"] == {}


def test_sampler_sees_new_pod_ttfl_values_once(acme: TenantConfig, redis_client) -> None:
    from nika_tui.scale.sampler import HostSampler
    from nika_tui.services.kernel_store import record_pod_ttfl

    sampler = HostSampler(redis_client, Settings.from_env().roots)
    record_pod_ttfl(redis_client, "acme", 2.0)
    first = sampler.sample(datetime.now(UTC))
    assert first.ttfl_s == ()  # values recorded before the sampler started are history
    record_pod_ttfl(redis_client, "acme", 41.5)
    record_pod_ttfl(redis_client, "acme", 39.0)
    second = sampler.sample(datetime.now(UTC))
    assert sorted(second.ttfl_s) == [39.0, 41.5]
    assert sampler.sample(datetime.now(UTC)).ttfl_s == ()


def test_sampler_cpu_percent_from_two_readings_of_proc_stat(acme, redis_client) -> None:
    from nika_tui.scale.sampler import HostSampler, read_cpu_times
    from tests.helpers import retry_until

    sampler = HostSampler(redis_client, Settings.from_env().roots)
    assert sampler.sample(datetime.now(UTC)).cpu_percent is None  # one reading: no rate yet
    _, total = read_cpu_times()
    retry_until(lambda: read_cpu_times()[1] > total, timeout=5)
    cpu = sampler.sample(datetime.now(UTC)).cpu_percent
    assert cpu is not None and 0.0 <= cpu <= 100.0


def test_sampler_reads_ram_queue_load_and_the_stores_disk(acme, redis_client, tmp_path) -> None:
    import os
    from pathlib import Path

    from nika_tui.paths import Roots
    from nika_tui.scale.sampler import HostSampler
    from nika_tui.services import redis_keys

    for n in range(7):
        redis_client.xadd(redis_keys.INGEST_STREAM, {"req": json.dumps({"n": n})})
    sample = HostSampler(redis_client, Roots(tmp_path, tmp_path)).sample(datetime.now(UTC))
    assert sample.queue_depth == 7 and sample.cores == os.cpu_count()
    fs = os.statvfs(tmp_path)  # the store's file system, read on our own
    used = 100.0 * (fs.f_blocks - fs.f_bfree) / fs.f_blocks
    assert sample.disk_percent is not None and abs(sample.disk_percent - used) < 1.0
    info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    kib = {k: int(v.split()[0]) for k, v in info.items() if k in ("MemTotal", "MemAvailable")}
    ram = 100.0 * (1 - kib["MemAvailable"] / kib["MemTotal"])
    assert sample.ram_percent is not None and abs(sample.ram_percent - ram) < 5.0
    assert sample.load_avg is not None and abs(sample.load_avg - os.getloadavg()[0]) < 1.0
