"""A RunPod pod is a container without cloud-init or systemd: it boots a bash start script
(decision 510). The script is what the pod's start command runs; here it runs for real, with a
real ``nika serve --join`` against a real password-protected Redis on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

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
from nika_tui.engine.worker_keys import alive_key, info_key
from nika_tui.scale import container_start
from nika_tui.scale.actions import apply_plan, default_factory
from nika_tui.scale.drain import worker_id_for
from nika_tui.scale.providers.runpod import START_CMD
from nika_tui.scale.state import ScaleState
from nika_tui.services.config_store import save_tenant
from nika_tui.services.redis_server import redis_server_binary
from nika_tui.settings import Settings
from tests.fake_providers import RUNPOD
from tests.helpers import retry_until
from tests.scale.fake_clouds import CloudState
from tests.scale.support import NOW, plan_for

SECRET = "pw-Runpod-7Qx-never-in-the-pod"


@pytest.fixture
def pod_tenant(clouds: tuple[str, CloudState], monkeypatch: pytest.MonkeyPatch) -> TenantConfig:
    """Tenant ``acme`` whose only provider is RunPod at the stand-in (key in an env var)."""
    monkeypatch.setenv("RUNPOD_API_KEY", RUNPOD["api_key"])
    shape = DEFAULT_PROVIDER_SCALE["runpod"].model_copy(update={"base_url": clouds[0]})
    refs = {"api_key": SecretRef(source=SecretSource.ENV, name="RUNPOD_API_KEY")}
    config = TenantConfig(
        tenant_id="acme",
        display_name="Acme",
        providers={Provider.RUNPOD: ProviderConfig(fields=refs)},
        auto_actions=AutoActions(scale=AutoMode.ESCALATE),
        scale=ScaleConfig(providers={"runpod": shape}),
    )
    save_tenant(config)
    return config


def test_a_pod_boots_a_start_script_not_cloud_config(
    pod_tenant: TenantConfig, clouds: tuple[str, CloudState]
) -> None:
    state = ScaleState()
    plan = plan_for(pod_tenant, "0ddba11")
    assert plan.provider is Provider.RUNPOD
    state.save_plan(plan, "pending")
    env = {"REDIS_URL": f"redis://nika:{SECRET}@203.0.113.7:6379/0"}
    apply_plan(plan.plan_id, pod_tenant, state, default_factory(), NOW, Settings.from_env(env))
    [pod] = clouds[1].instances["runpod"].values()
    assert pod["dockerStartCmd"] == ["bash", "-c", START_CMD]
    script = base64.b64decode(pod["env"]["NIKA_BOOTSTRAP"]).decode()
    assert script.startswith("#!/bin/bash\n")
    assert "systemctl" not in script and "#cloud-config" not in script
    assert SECRET not in script and SECRET not in json.dumps(pod)
    # The password, if any, comes from the user's RunPod secret: the pod holds its reference.
    assert pod["env"]["NIKA_REDIS_PASSWORD"] == "{{ RUNPOD_SECRET_nika_redis_password }}"
    checked = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
    assert checked.returncode == 0, checked.stderr
    serve = f"serve --join redis://nika@203.0.113.7:6379/0 --worker-id {worker_id_for('0ddba11')}"
    assert serve in script


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def tcp_redis(tmp_path: Path) -> Iterator[str]:
    """A real redis-server on 127.0.0.1 that wants ``SECRET`` (a worker's view of the primary)."""
    port = _free_port()
    root = tmp_path / "redis"
    root.mkdir()
    cmd = [str(redis_server_binary()), "--port", str(port), "--bind", "127.0.0.1",
           "--requirepass", SECRET, "--save", "", "--dir", str(root)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(host="127.0.0.1", port=port, password=SECRET)
    retry_until(lambda: _pings(client), timeout=20, interval=0.05, what="redis answers")
    yield f"redis://127.0.0.1:{port}/0"
    client.close()
    proc.terminate()
    proc.wait(timeout=20)


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def _pid(client: redis.Redis, worker: str) -> int:
    return int(client.hget(info_key(worker), "pid") or 0)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


@pytest.mark.slow
@pytest.mark.embedder
def test_the_start_script_runs_a_worker_restarts_it_and_stops_it(
    tcp_redis: str, tmp_path: Path
) -> None:
    """The operator places the password over SSH (the pod's secret left unset)."""
    worker = "nika-0ddba11"
    prefix, etc, var = tmp_path / "opt", tmp_path / "etc", tmp_path / "var"
    (prefix / "bin").mkdir(parents=True)
    # The venv is already there (a restarted container keeps it): this one is ours.
    (prefix / "bin" / "nika").symlink_to(Path(sys.executable).parent / "nika")
    script = container_start.render(
        "acme", tcp_redis, "0", worker, prefix=str(prefix), etc_dir=str(etc), data_dir=str(var)
    )
    log = tmp_path / "start.log"
    hf_home = os.environ.get("HF_HOME") or str(Path.home() / ".cache" / "huggingface")
    env = dict(
        os.environ,
        HF_HOME=hf_home,
        NIKA_LEASE_TTL_S="5",
        NIKA_KERNEL_WATCH_S="0",
        NIKA_REDIS_PASSWORD=container_start.SECRET_REF,
    )  # RunPod found no such secret
    env.pop("REDIS_URL", None)
    with log.open("ab") as out:
        proc = subprocess.Popen(["bash", "-c", script], stdout=out, stderr=out, env=env)
    client = redis.Redis.from_url(tcp_redis, password=SECRET)
    try:
        retry_until(lambda: "waiting for" in log.read_text(), timeout=30, interval=0.05,
                    what="the script waits for the password")  # fmt: skip
        assert oct(etc.stat().st_mode & 0o777) == "0o700"
        assert client.get(alive_key(worker)) is None, "a worker started without its password"
        (etc / "redis_password").write_text(SECRET + "\n")
        retry_until(lambda: client.get(alive_key(worker)) is not None, timeout=180,
                    interval=0.1, what=f"worker {worker} joins")  # fmt: skip
        first = _pid(client, worker)
        assert first and first != proc.pid
        for where in ("cmdline", "environ"):
            assert SECRET.encode() not in Path(f"/proc/{first}/{where}").read_bytes()

        os.kill(first, signal.SIGKILL)  # a crash: the script starts it again
        client.delete(alive_key(worker))
        retry_until(lambda: _pid(client, worker) not in (0, first)
                    and client.get(alive_key(worker)) is not None,
                    timeout=180, interval=0.1, what="the worker comes back")  # fmt: skip
        second = _pid(client, worker)

        proc.send_signal(signal.SIGTERM)  # the pod stops: the worker stops cleanly
        assert proc.wait(timeout=120) == 0, log.read_text()[-2000:]
        retry_until(lambda: _gone(second), timeout=30, interval=0.05, what="the worker exits")
        assert client.get(alive_key(worker)) is None, "a stopped worker left its heartbeat"
    finally:
        if proc.poll() is None:
            proc.kill()
        client.close()


@pytest.mark.slow
@pytest.mark.embedder
def test_the_start_script_takes_the_password_from_the_pods_secret(
    tcp_redis: str, tmp_path: Path
) -> None:
    """RunPod filled the secret's reference: the script writes it to the 0600 file and takes
    it out of the environment before the worker starts."""
    worker = "nika-5ec2e7"
    prefix, etc, var = tmp_path / "opt", tmp_path / "etc", tmp_path / "var"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "nika").symlink_to(Path(sys.executable).parent / "nika")
    script = container_start.render(
        "acme", tcp_redis, "0", worker, prefix=str(prefix), etc_dir=str(etc), data_dir=str(var)
    )
    log = tmp_path / "start.log"
    hf_home = os.environ.get("HF_HOME") or str(Path.home() / ".cache" / "huggingface")
    env = dict(os.environ, HF_HOME=hf_home, NIKA_KERNEL_WATCH_S="0", NIKA_REDIS_PASSWORD=SECRET)
    env.pop("REDIS_URL", None)
    with log.open("ab") as out:
        proc = subprocess.Popen(["bash", "-c", script], stdout=out, stderr=out, env=env)
    client = redis.Redis.from_url(tcp_redis, password=SECRET)
    try:
        retry_until(lambda: client.get(alive_key(worker)) is not None, timeout=180,
                    interval=0.1, what=f"worker {worker} joins")  # fmt: skip
        password = etc / "redis_password"
        assert password.read_text() == SECRET
        assert oct(password.stat().st_mode & 0o777) == "0o600"
        pid = _pid(client, worker)
        for where in ("cmdline", "environ"):
            assert SECRET.encode() not in Path(f"/proc/{pid}/{where}").read_bytes()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0, log.read_text()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
        client.close()
