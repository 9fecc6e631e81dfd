"""A provider key never leaves the secret store's route (env here) and the auth header (issue 18).

`nika scale plan` and `nika scale apply` run as child processes against the Scaleway stand-in
with the key in the environment; while the create is held in the stand-in, the argv of that
process and of every process under it is read from /proc. The service's scheduler then applies
a plan the provider refuses with an error body that echoes the key. Afterwards the key must be
in no argv, no log record (DEBUG, every logger), no output, no file under the config and data
dirs (state, bus, billing…), no Redis value (the shared state, confirmations, the bus), no
cloud-init user data, and no URL the provider saw.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis

from nika_tui.domain.tenant import AutoMode
from nika_tui.paths import roots
from nika_tui.scale.actions import default_factory
from nika_tui.scale.planner import Plan, PlanKind
from nika_tui.scale.policy import act
from nika_tui.scale.scheduler import ScaleScheduler
from nika_tui.scale.state import ScaleState
from nika_tui.services.bus import open_bus
from nika_tui.services.config_store import save_tenant
from nika_tui.settings import Settings
from tests.fake_providers import SCW
from tests.scale.conftest import scaleway_tenant
from tests.scale.fake_clouds import CloudState
from tests.scale.support import Clock, nika_scale, plan_for, saturate

KEY = SCW["secret_key"]
WAIT_S = 60.0


def _tree(root: int) -> list[int]:
    """``root`` and every live process under it (from /proc's parent ids)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, ppid in parents.items() if ppid in frontier]
        found += frontier
    return found


def _argv(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _redis_text(r: redis.Redis) -> str:
    """Every key and value in the Redis, as text."""
    out: list[str] = []
    for key in r.scan_iter(count=500):
        kind = r.type(key)
        out.append(str(key))
        if kind == "string":
            out.append(str(r.get(key)))
        elif kind == "hash":
            out.append(json.dumps(r.hgetall(key)))
        elif kind == "list":
            out.append(json.dumps(r.lrange(key, 0, -1)))
        elif kind == "set":
            out.append(json.dumps(sorted(r.smembers(key))))  # type: ignore[arg-type]
        elif kind == "zset":
            out.append(json.dumps(r.zrange(key, 0, -1)))
        elif kind == "stream":
            out.append(json.dumps(r.xrange(key)))
    return "\n".join(out)


def _files_holding(base: Path, needle: bytes) -> list[str]:
    return [str(p) for p in base.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_a_provider_key_reaches_no_argv_log_file_redis_value_or_user_data(
    clouds: tuple[str, CloudState],
    scw_env: None,
    redis_client: redis.Redis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    base, cloud = clouds
    save_tenant(scaleway_tenant(base))  # escalate: the CLI applies
    now = datetime.now(UTC)
    saturate(redis_client, now)
    planned = nika_scale("plan", "--tenant", "acme")
    assert planned.returncode == 0, planned.stderr
    plan_id = json.loads(planned.stdout)["plan_id"]

    held = cloud.hold("POST", r"/servers$")
    argv = [sys.executable, "-m", "nika_tui", "scale", "apply", plan_id, "--tenant", "acme"]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert held.arrived.wait(WAIT_S), "the apply never reached the provider"
        seen = {pid: _argv(pid) for pid in _tree(child.pid)}
    finally:
        held.release.set()
        out, err = child.communicate(timeout=WAIT_S)
    assert child.returncode == 0, err
    assert seen and all(KEY not in line for line in seen.values()), seen
    [server] = cloud.instances["scaleway"].values()
    assert server["user_data"].startswith("#cloud-config") and KEY not in server["user_data"]

    # The service applies a plan of its own; the provider refuses it, echoing the key.
    save_tenant(scaleway_tenant(base, AutoMode.AUTONOMOUS, max_workers=3))
    echo = {"type": "invalid_arguments", "message": f"token {KEY} may not create servers"}
    cloud.fail("POST", r"/servers$", 400, echo)
    caplog.set_level(logging.DEBUG)
    scheduler = ScaleScheduler(redis_client, Settings.from_env(), monotonic=Clock(), cooldown_s=0.0)
    assert scheduler.tick(now) == [], "the refusal is logged, not raised"
    failed = [r for r in caplog.records if "scale planning for acme failed" in r.getMessage()]
    assert failed and "***" in failed[0].getMessage()

    where = roots()
    assert KEY not in out + err
    assert KEY not in caplog.text
    assert _files_holding(where.config, KEY.encode()) == []
    assert _files_holding(where.data, KEY.encode()) == []
    assert KEY not in _redis_text(redis_client)
    assert '"status": "failed"' in _redis_text(redis_client).replace('\\"', '"')
    assert all(KEY not in path for _, path in cloud.requests)


def test_a_refused_decommission_puts_no_key_on_the_bus(
    clouds: tuple[str, CloudState], scw_env: None, redis_client: redis.Redis
) -> None:
    """The one scale event carrying a provider's words: ``scale.failed`` when the leader
    finishes a drain and the provider refuses the delete, here echoing the key."""
    base, cloud = clouds
    config = scaleway_tenant(base, AutoMode.AUTONOMOUS)
    save_tenant(config)
    state = ScaleState(client=redis_client)
    now = datetime.now(UTC)
    out = act(
        plan_for(config, "aaaa"),
        config,
        state,
        default_factory(),
        redis_client,
        now,
        Settings.from_env(),
    )
    assert out["action"] == "applied"
    [worker] = state.workers("acme")
    gone = Plan("bbbb", "acme", PlanKind.DECOMMISSION, now.isoformat(), ("calm",),
                worker.provider, instance_id=worker.instance_id)  # fmt: skip
    assert (
        act(gone, config, state, default_factory(), redis_client, now, Settings.from_env())[
            "action"
        ]
        == "draining"
    )
    echo = {"type": "permissions_denied", "message": f"token {KEY} may not terminate"}
    cloud.fail("POST", r"/action$", 403, echo)
    done = ScaleScheduler(redis_client, Settings.from_env(), monotonic=Clock()).tick(now)
    assert "decommission:acme:failed" in done
    [error] = [
        str(line.data["body"]["error"])
        for line in open_bus("acme").read()
        if line.data and line.data["kind"] == "scale.failed"
    ]
    assert "Scaleway refused" in error and "***" in error
    assert _files_holding(roots().data, b"scale.failed"), "the bus is a file under the data dir"
    assert _files_holding(roots().data, KEY.encode()) == []
    assert KEY not in _redis_text(redis_client)
