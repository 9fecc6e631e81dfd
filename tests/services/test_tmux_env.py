"""The private tmux server starts clean; a kernel sees the allow-list and its own tenant only.

Real tmux on a private socket; the kernel is ``sleep`` so its ``/proc/<pid>/environ`` is the
environment the agent would get.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import redis

from nika_tui.domain.tenant import AgentCli, KernelConfig, TenantConfig
from nika_tui.engine.kernels.manager import KernelManager
from nika_tui.engine.kernels.results import session_name
from nika_tui.paths import tmux_socket_name
from nika_tui.services.config_store import save_tenant
from nika_tui.services.tmux_env import foreign_globals, server_environment
from nika_tui.services.tmux_sessions import TmuxSessions
from nika_tui.settings import Settings
from tests.helpers import retry_until

if TYPE_CHECKING:  # libtmux is imported by the tmux fixture at use (issue 12)
    import libtmux

pytestmark = pytest.mark.tmux

SECRETS = {
    "SCW_SECRET_KEY": "scw-secret-0001",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-0002",
    "NIKA_EMBEDDINGS_API_KEY": "embed-secret-0003",
    "ANTHROPIC_API_KEY": "sk-ant-operator-0004",
}


def _tenant(tenant_id: str, workdir: Path, env: dict[str, str]) -> None:
    sh = shutil.which("sh")
    assert sh is not None
    # A line at once, as an agent's banner: spawn waits for the first output (15 s at most).
    agent = [sh, "-c", "echo ready; exec sleep 600"]
    save_tenant(
        TenantConfig(
            tenant_id=tenant_id,
            display_name=tenant_id.title(),
            agent_cli=AgentCli.SHELL,
            kernel=KernelConfig(workdir=str(workdir), command=agent, env=env),
        )
    )


def _environ(manager: KernelManager, tenant_id: str) -> dict[str, str]:
    """The agent process's environment, read from /proc."""

    def pid() -> int | None:
        info = manager.tmux.pane(session_name(tenant_id))
        agent = manager.tmux.pane_agent_pid(info)
        # The agent is the shim's child once forked: wait until it is no longer the shim.
        return agent if agent is not None and info is not None and agent != info.pid else None

    raw = Path(f"/proc/{retry_until(pid, what='the agent pid')}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)


def _globals(socket: str) -> dict[str, str]:
    out = subprocess.run(
        ["tmux", "-L", socket, "show-environment", "-g"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


@pytest.fixture
def secrets_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in SECRETS.items():
        monkeypatch.setenv(key, value)


def test_kernels_get_no_provider_secret_and_no_other_tenant_variable(
    tmux_server: libtmux.Server,
    redis_client: redis.Redis,
    secrets_in_env: None,
    tmp_path: Path,
) -> None:
    _tenant("tena", tmp_path, {"TENA_ONLY": "a-private"})
    _tenant("tenb", tmp_path, {"TENB_ONLY": "b-private"})
    manager = KernelManager(Settings.from_env(), redis_client=redis_client, stop_timeout_s=2.0)
    manager.spawn("tena")
    manager.spawn("tenb")
    socket = tmux_socket_name()
    glob = _globals(socket)
    assert not set(SECRETS) & set(glob), glob
    assert not foreign_globals(f"{k}={v}" for k, v in glob.items())
    env_a, env_b = _environ(manager, "tena"), _environ(manager, "tenb")
    for env, own, other, tenant in (
        (env_a, "TENA_ONLY", "TENB_ONLY", "tena"),
        (env_b, "TENB_ONLY", "TENA_ONLY", "tenb"),
    ):
        assert not set(SECRETS) & set(env), sorted(env)
        assert not any(v in SECRETS.values() for v in env.values())
        assert own in env and other not in env
        assert env["NIKA_TENANT_ID"] == tenant
        assert env["NIKA_OS_DATA_DIR"] == os.environ["NIKA_OS_DATA_DIR"]


def test_a_server_started_dirty_is_scrubbed_before_a_kernel_starts(
    tmux_server: libtmux.Server,
    redis_client: redis.Redis,
    secrets_in_env: None,
    tmp_path: Path,
) -> None:
    socket = tmux_socket_name()
    # A server an older version (or a person) started from a shell full of secrets.
    subprocess.run(["tmux", "-L", socket, "new-session", "-d", "-s", "old", "cat"], check=True)
    assert "SCW_SECRET_KEY" in _globals(socket)
    _tenant("tena", tmp_path, {})
    manager = KernelManager(Settings.from_env(), redis_client=redis_client, stop_timeout_s=2.0)
    manager.spawn("tena")
    assert not set(SECRETS) & set(_globals(socket))
    assert not set(SECRETS) & set(_environ(manager, "tena"))


def test_tmux_commands_run_with_the_allow_list_only(
    tmux_server: libtmux.Server, secrets_in_env: None, tmp_path: Path
) -> None:
    env = server_environment(os.environ)
    assert "PATH" in env and not set(SECRETS) & set(env)
    tmux = TmuxSessions(tmux_socket_name())
    tmux.create("plain", "plain", tmp_path, {}, ["sleep", "600"])
    assert not set(SECRETS) & set(_globals(tmux_socket_name()))
