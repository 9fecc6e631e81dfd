"""``nika up`` / ``nika down``: embedded Redis + the service in tmux session nika-core, on the
test's private tmux socket; a second ``up`` reuses the running service."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from nika_tui.cli import main
from nika_tui.cli.dashboard import announce_background_start
from nika_tui.paths import data_dir
from nika_tui.services.redis_server import embedded_running, ensure_embedded, stop_embedded
from nika_tui.settings import Settings

if TYPE_CHECKING:  # libtmux is imported by the tmux fixture at use (issue 12)
    import libtmux

pytestmark = [pytest.mark.slow, pytest.mark.tmux, pytest.mark.embedder]


@pytest.fixture
def embedded_redis_cleanup() -> Iterator[None]:
    """Whatever happens, stop the embedded Redis this test's `nika up` starts."""
    yield
    stop_embedded()


def test_down_says_which_kernels_keep_running(
    tmux_server: libtmux.Server,
    embedded_redis_cleanup: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A kernel is an agent's tmux session: `down` leaves it alone, and says so (issue 17).
    tmux_server.new_session("nika-tenant-acme", window_command="sleep 600", detach=True)
    assert main(["down"]) == 0
    out = capsys.readouterr().out
    assert "1 kernel(s) keep running: acme" in out and "nika kernel stop TENANT" in out
    assert "Redis" not in out  # none runs here: nothing to say about it
    assert tmux_server.has_session("nika-tenant-acme")
    assert main(["down", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kernels_running"] == ["acme"]


def test_down_says_the_embedded_redis_keeps_running_and_down_redis_stops_it(
    tmux_server: libtmux.Server,
    embedded_redis_cleanup: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ensure_embedded()
    assert main(["down"]) == 0
    out = capsys.readouterr().out
    assert "embedded Redis keeps running" in out and "`nika down --redis`" in out
    assert embedded_running()
    assert main(["down", "--redis"]) == 0
    out = capsys.readouterr().out
    assert "embedded Redis stopped" in out and "keeps running" not in out
    assert not embedded_running()


def test_the_autostart_line_says_plain_down_leaves_redis_up(
    isolated_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    # Nothing answers here: opening the dashboard would start both, and says how to stop each.
    announce_background_start(Settings.from_env(isolated_env))
    err = capsys.readouterr().err
    assert "`nika down` stops the service" in err and "`nika down --redis` Redis too" in err
    assert "`nika down` stops them" not in err


def test_up_reuses_and_down_stops(
    tmux_server: libtmux.Server,
    embedded_redis_cleanup: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["up", "--json", "--timeout", "300"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["running"] and first["started"]
    assert tmux_server.has_session("nika-core")
    # The environment handoff file is read and deleted by the service.
    assert list((data_dir() / "run").iterdir()) == []

    assert main(["up", "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert not second["started"] and second["pid"] == first["pid"]

    assert main(["down", "--redis", "--json"]) == 0
    down = json.loads(capsys.readouterr().out)
    assert down == {
        "stopped": True,
        "stopping": False,
        "redis_stopped": True,
        "kernels_running": [],
    }
    assert not tmux_server.has_session("nika-core")
