"""``nika up`` trusts a pid, not only a heartbeat; ``down`` is prompt; stopped means stopped.

Real ``nika up`` (embedded Redis + the service in tmux session nika-core on the test's private
socket), real ``kill -9``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from nika_tui.cli import main
from nika_tui.domain.tenant import TenantConfig
from nika_tui.services.config_store import save_tenant
from nika_tui.services.liveness import process_alive, reap
from nika_tui.services.redis_server import embedded_location, stop_embedded
from tests.helpers import retry_until

if TYPE_CHECKING:  # libtmux is imported by the tmux fixture at use (issue 12)
    import libtmux

pytestmark = [pytest.mark.slow, pytest.mark.tmux, pytest.mark.embedder]


@pytest.fixture
def embedded_redis_cleanup() -> Iterator[None]:
    yield
    main(["down", "--redis", "--json"])
    stop_embedded()


def _up(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["up", "--json", "--timeout", "300"]) == 0
    out: dict[str, object] = json.loads(capsys.readouterr().out)
    return out


def test_up_after_kill_9_restarts_at_once_instead_of_trusting_the_heartbeat(
    tmux_server: libtmux.Server,
    embedded_redis_cleanup: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    first = _up(capsys)
    pid = int(str(first["pid"]))
    os.kill(pid, signal.SIGKILL)
    retry_until(lambda: not process_alive(pid), what="the killed service to be gone")
    # The heartbeat key is still there (TTL 10 s): `up` must not believe it.
    second = _up(capsys)
    assert second["started"] is True
    assert int(str(second["pid"])) != pid and process_alive(int(str(second["pid"])))


def test_down_returns_promptly_and_read_only_commands_do_not_restart_redis(
    tmux_server: libtmux.Server,
    embedded_redis_cleanup: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pid = int(str(_up(capsys)["pid"]))
    assert main(["down", "--redis", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stopped"] is True
    # Stopped means stopped when `down` returns: the service is gone (not a zombie counted as
    # alive), and the embedded Redis too. How long it took is the benchmark's business.
    assert not process_alive(pid)
    assert not embedded_location().socket.exists()
    save_tenant(TenantConfig(tenant_id="tena", display_name="Tena"))
    loc = embedded_location()
    for argv in (["kernel", "list"], ["confirm", "list", "--tenant", "tena"]):
        proc = subprocess.run(
            [sys.executable, "-m", "nika_tui", *argv], capture_output=True, text=True
        )
        assert not loc.socket.exists(), f"`nika {' '.join(argv)}` restarted the embedded Redis"
        if proc.returncode != 0:  # it needed Redis: it says so instead of starting it
            assert "not running" in proc.stderr and "nika up" in proc.stderr, proc.stderr


def test_a_zombie_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    retry_until(
        lambda: Path(f"/proc/{child.pid}/stat").read_text().split(") ")[1][0] == "Z",
        what="the child to exit unreaped",
    )
    assert not process_alive(child.pid)  # kill(pid, 0) alone says it exists
    reap(child.pid)
    assert not process_alive(child.pid)
