"""CPU and RAM quotas on a real kernel (private tmux socket) through real cgroups on this host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import redis

from nika_tui.domain.tenant import AgentCli, KernelConfig, Quotas, TenantConfig
from nika_tui.engine.kernels.manager import KernelManager
from nika_tui.errors import ConfigError
from nika_tui.quota.cgroups import CFS_PERIOD_US, MIB, CgroupMode, TenantCgroup, detect
from nika_tui.services.config_store import parse_config, save_tenant
from nika_tui.settings import Settings
from tests.helpers import retry_until

if TYPE_CHECKING:  # libtmux is imported by the tmux fixture at use (issue 12)
    import libtmux

STANDIN = [sys.executable, "-m", "nika_tui.assets.standin_agent"]
SUPPORT = detect()
needs_cgroups = pytest.mark.skipif(
    SUPPORT.mode is CgroupMode.NONE, reason=f"no writable cgroups here: {SUPPORT.reason}"
)


@pytest.fixture
def manager(
    tmux_server: libtmux.Server, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> Iterator[KernelManager]:
    monkeypatch.setenv("NIKA_QUOTA_CGROUPS", "1")
    yield KernelManager(Settings.from_env(), redis_client=redis_client, stop_timeout_s=4.0)


def _tenant(tmp_path: Path) -> TenantConfig:
    # A unique id: cgroup names are host-wide and other test runs share this machine.
    config = TenantConfig(
        tenant_id=f"q{uuid.uuid4().hex[:10]}",
        display_name="Quota",
        agent_cli=AgentCli.SHELL,
        quotas=Quotas(cpu_percent=35, ram_mb=300, tokens_per_day=1000),
        kernel=KernelConfig(workdir=str(tmp_path), command=STANDIN),
    )
    save_tenant(config)
    return config


def _procs(path: Path) -> set[int]:
    return {int(p) for p in (path / "cgroup.procs").read_text().split()}


@pytest.mark.tmux
@needs_cgroups
def test_kernel_runs_in_its_own_cgroup_with_the_limits_and_leaves_none(
    manager: KernelManager, tmp_path: Path
) -> None:
    config = _tenant(tmp_path)
    group = TenantCgroup(config.tenant_id, SUPPORT)
    result = manager.spawn(config.tenant_id)
    try:
        assert result.pid is not None
        for path in group.dirs.values():
            assert path.name == f"nika-tenant-{config.tenant_id}"
            assert result.pid in _procs(path)
        limits = group.read()
        assert limits["cpu_quota_us"] == 35 * CFS_PERIOD_US // 100
        assert limits["cpu_period_us"] == CFS_PERIOD_US
        assert limits["memory_limit_bytes"] == 300 * MIB
        # The kernel's own view agrees: /proc/<pid>/cgroup names the tenant's group.
        own = Path(f"/proc/{result.pid}/cgroup").read_text()
        assert f"nika-tenant-{config.tenant_id}" in own
        cli = subprocess.run(
            [sys.executable, "-m", "nika_tui", "quota", "status", "--tenant", config.tenant_id,
             "--json"], capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert cli.returncode == 0, cli.stderr
        status = json.loads(cli.stdout)
        assert status["cgroup"]["mode"] == SUPPORT.mode.value and status["cgroup"]["exists"]
        assert status["cgroup"]["read_back"]["memory_limit_bytes"] == 300 * MIB
        assert result.pid in status["cgroup"]["pids"]
        assert status["tokens"]["limit"] == 1000
    finally:
        manager.stop(config.tenant_id)
    retry_until(lambda: not any(p.exists() for p in group.dirs.values()), timeout=10)


@needs_cgroups
def test_a_process_moved_in_is_limited_and_cgroup_removed_after(tmp_path: Path) -> None:
    group = TenantCgroup(f"q{uuid.uuid4().hex[:10]}", SUPPORT)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        group.apply(cpu_percent=20, ram_mb=128)
        moved = group.attach(child.pid)
        assert child.pid in moved
        assert child.pid in set(group.procs())
    finally:
        child.kill()
        child.wait()
    group.remove()
    assert not any(p.exists() for p in group.dirs.values())


def test_detect_names_the_mode_and_reason() -> None:
    info = SUPPORT.as_dict()
    assert info["mode"] in ("v1", "v2", "none")
    assert info["reason"]
    assert (info["fallback"] is None) == (SUPPORT.mode is not CgroupMode.NONE)


def test_detect_without_cgroup_mounts_says_none_and_fallback(tmp_path: Path) -> None:
    (tmp_path / "self").mkdir()
    (tmp_path / "self" / "mountinfo").write_text("22 1 0:21 / /proc rw - proc proc rw\n")
    (tmp_path / "self" / "cgroup").write_text("0::/\n")
    support = detect(tmp_path)
    assert support.mode is CgroupMode.NONE
    assert "no cgroup v1 cpu hierarchy mounted" in support.reason
    assert support.as_dict()["fallback"]


@pytest.mark.parametrize("field", ["cpu_percent", "ram_mb", "tokens_per_day"])
def test_a_quota_of_zero_is_refused_with_the_field(field: str, tmp_path: Path) -> None:
    text = (
        "schema_version: 1\ntenant_id: acme\ndisplay_name: Acme\nquotas:\n"
        "  cpu_percent: 50\n  ram_mb: 512\n  tokens_per_day: 1000\n"
    ).replace(f"{field}: ", f"{field}: 0 #")
    with pytest.raises(ConfigError) as caught:
        parse_config(tmp_path / "config.yaml", text)
    assert f"quotas.{field}" in str(caught.value)


def test_cgroups_off_by_env_in_the_suite() -> None:
    assert os.environ.get("NIKA_QUOTA_CGROUPS") == "0"


def test_doctor_says_which_cgroup_mode() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "nika_tui", "doctor", "--json"], capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    checks = {c["name"]: c for c in json.loads(out.stdout)["checks"]}
    assert checks["cgroups"]["detail"].startswith(SUPPORT.mode.value)
    if SUPPORT.mode is CgroupMode.NONE:
        assert "monitoring only" in checks["cgroups"]["detail"]
