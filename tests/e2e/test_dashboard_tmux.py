"""End to end: `nika` in a real tmux pane (private socket), driven with send-keys."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator

import pytest

from nika_tui.domain.tenant import TenantConfig
from nika_tui.services.config_store import save_tenant
from nika_tui.settings import Settings
from tests.helpers import retry_until

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs the tmux binary"),
]


@pytest.fixture
def tmux(isolated_env: dict[str, str]) -> Iterator[list[str]]:
    """``tmux -L {private socket}``; the server is killed afterwards."""
    base = ["tmux", "-L", isolated_env["NIKA_TMUX_SOCKET"]]
    yield base
    subprocess.run([*base, "kill-server"], capture_output=True, check=False)


def _screen(tmux: list[str], target: str = "dash") -> str:
    out = subprocess.run(
        [*tmux, "capture-pane", "-p", "-t", target], capture_output=True, text=True
    )
    return out.stdout


def _keys(tmux: list[str], *keys: str, target: str = "dash") -> None:
    subprocess.run([*tmux, "send-keys", "-t", target, *keys], check=True)


def _wait(tmux: list[str], *needles: str, timeout: float = 20.0) -> str:
    def probe() -> str | None:
        screen = _screen(tmux)
        return screen if all(n in screen for n in needles) else None

    return retry_until(probe, timeout=timeout, what=f"{needles} on screen")


def test_nika_dashboard_in_a_real_pane(
    tmux: list[str], isolated_env: dict[str, str], redis_url: str
) -> None:
    save_tenant(
        TenantConfig(tenant_id="acme", display_name="Acme"), Settings.from_env(isolated_env).roots
    )
    env = {
        **isolated_env,
        "REDIS_URL": redis_url,
        "TERM": "xterm-256color",
        "NIKA_NO_AUTOSTART": "1",  # this test is about the screen, not the memory service
    }
    # The tenant's kernel: a plain shell in its session on the same private socket.
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", "nika-tenant-acme", "-x", "100", "-y", "20", "sh"],
        check=True,
    )
    _keys(tmux, "echo inside-the-kernel", "Enter", target="nika-tenant-acme")
    setenv = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
    subprocess.run(
        [
            *tmux,
            "new-session",
            "-d",
            "-s",
            "dash",
            "-x",
            "140",
            "-y",
            "36",
            *setenv,
            sys.executable,
            "-m",
            "nika_tui",
        ],
        check=True,
    )
    # With another session on the server, tmux sizes new windows by its own rules: be explicit.
    subprocess.run([*tmux, "resize-window", "-t", "dash", "-x", "140", "-y", "36"], check=True)
    screen = _wait(tmux, "acme", "Redis ok")
    assert "service down" in screen  # no memory service in this test: said, not fatal
    assert "Context (│ = 61%)" in screen
    # A live change in Redis reaches the screen (the row is repainted in place).
    import redis

    from nika_tui.services import redis_keys

    client = redis.Redis.from_url(redis_url, decode_responses=True)
    client.hset(
        redis_keys.kernel_state("acme"), mapping={"state": "waiting-input", "state_source": "hook"}
    )
    _wait(tmux, "waiting-input (hook)")
    client.hset(redis_keys.kernel_state("acme"), mapping={"state": "idle"})
    _wait(tmux, "idle (hook)")

    _keys(tmux, "?")
    # The help of the screen in front: its title over its key table (key | action).
    _wait(tmux, "Overview", "│ key", "│ action")
    _keys(tmux, "Escape")
    _wait(tmux, "Tenant", "Kernel")

    # Attach: the dashboard steps aside for tmux attach, and comes back on detach.
    _keys(tmux, "a")
    _wait(tmux, "inside-the-kernel")
    _keys(tmux, "C-b", "d")
    _wait(tmux, "back from acme")

    _keys(tmux, "q")
    retry_until(
        lambda: "dash" not in subprocess.run([*tmux, "ls"], capture_output=True, text=True).stdout,
        timeout=10,
        what="the dashboard to quit",
    )
