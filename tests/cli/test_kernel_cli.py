"""``nika kernel spawn|list|attach|stop|restart`` against real tmux and the embedded Redis."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from nika_tui.cli import main
from nika_tui.domain.tenant import KernelConfig, TenantConfig
from nika_tui.services.config_store import save_tenant
from tests.helpers import retry_until

if TYPE_CHECKING:  # libtmux is imported by the tmux fixture at use (issue 12)
    import libtmux

pytestmark = pytest.mark.tmux

STANDIN = [sys.executable, "-m", "nika_tui.assets.standin_agent"]


@pytest.fixture
def tenant(tmp_path: Path, tmux_server: libtmux.Server, redis_url: str) -> str:
    save_tenant(
        TenantConfig(
            tenant_id="acme",
            display_name="Acme",
            kernel=KernelConfig(workdir=str(tmp_path), command=STANDIN),
        )
    )
    return "acme"


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code = main([*argv, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def test_spawn_list_stop_in_json(
    tenant: str, tmux_server: libtmux.Server, capsys: pytest.CaptureFixture[str]
) -> None:
    spawned = run_json(capsys, "kernel", "spawn", tenant)
    assert spawned["spawned"] is True and spawned["session"] == "nika-tenant-acme"
    assert spawned["pod_ttfl_s"] > 0
    assert tmux_server.has_session("nika-tenant-acme")

    def listed_idle() -> dict[str, Any] | None:
        rows = run_json(capsys, "kernel", "list")
        return next((r for r in rows if r["tenant_id"] == tenant and r["state"] == "idle"), None)

    row = retry_until(listed_idle, what="acme idle in `nika kernel list`")
    assert row["source"] == "pane" and row["cli"] == "shell" and row["stale"] is False
    assert row["pid"] == spawned["pid"]

    stopped = run_json(capsys, "kernel", "stop", tenant)
    assert stopped["stopped"] is True and stopped["forced"] is False
    assert not tmux_server.has_session("nika-tenant-acme")
    rows = run_json(capsys, "kernel", "list")
    assert [(r["tenant_id"], r["state"]) for r in rows] == [("acme", "exited")]


def test_spawn_twice_says_so(tenant: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kernel", "spawn", tenant]) == 0
    assert "started in tmux session nika-tenant-acme" in capsys.readouterr().out
    assert main(["kernel", "spawn", tenant]) == 0
    assert "already running" in capsys.readouterr().out


def test_restart_in_json(tenant: str, capsys: pytest.CaptureFixture[str]) -> None:
    first = run_json(capsys, "kernel", "spawn", tenant)
    result = run_json(capsys, "kernel", "restart", tenant)
    assert result["stop"]["stopped"] is True
    assert result["spawn"]["spawned"] is True and result["spawn"]["pid"] != first["pid"]
    assert "recall" in result


def test_unknown_tenant_is_a_clear_error(
    tmux_server: libtmux.Server, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["kernel", "spawn", "nobody", "--json"]) == 2
    err = json.loads(capsys.readouterr().err)
    assert "unknown tenant 'nobody'" in err["error"] and "nika setup" in err["hint"]
    assert main(["kernel", "stop", "Bad_Id"]) == 2
    assert "invalid tenant id" in capsys.readouterr().err


def test_attach_json_gives_the_command(tenant: str, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_json(capsys, "kernel", "attach", tenant)
    assert result["command"][1:] == [
        "-L", os.environ["NIKA_TMUX_SOCKET"], "attach-session", "-t", "=nika-tenant-acme",
    ]  # fmt: skip


def test_attach_a_stopped_kernel_is_an_error(
    tenant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["kernel", "attach", tenant]) == 1
    err = capsys.readouterr().err
    assert "not running" in err and "nika kernel spawn acme" in err


def _drain(fd: int, seen: list[bytes]) -> None:
    with contextlib.suppress(OSError):
        while chunk := os.read(fd, 65536):
            seen.append(chunk)


def test_attach_hands_the_terminal_to_tmux_and_returns(
    tenant: str, tmux_server: libtmux.Server, capsys: pytest.CaptureFixture[str]
) -> None:
    run_json(capsys, "kernel", "spawn", tenant)
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "nika_tui", "kernel", "attach", tenant],
        stdin=terminal, stdout=terminal, stderr=terminal, env={**os.environ, "TERM": "xterm"},
        start_new_session=True,
    )  # fmt: skip
    os.close(terminal)
    # Read what tmux draws, so that a full terminal buffer can never block the client.
    seen: list[bytes] = []
    drain = threading.Thread(target=_drain, args=(controller, seen), daemon=True)
    drain.start()
    try:
        retry_until(
            lambda: tmux_server.cmd("list-clients", "-F", "#{client_session}").stdout,
            what="a tmux client attached to the kernel",
        )
        clients = tmux_server.cmd("list-clients", "-F", "#{client_session}").stdout
        assert clients == ["nika-tenant-acme"]
        tmux_server.cmd("detach-client", "-s", "=nika-tenant-acme")
        assert proc.wait(timeout=10) == 0  # attach returned once the client detached
        assert tmux_server.has_session("nika-tenant-acme")  # detaching leaves the kernel on
        # It said which window it attached to, before tmux took the screen.
        said = b"attaching to acme's shell window: its only live agent"
        retry_until(lambda: said in b"".join(seen), what="attach to say which window")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        drain.join(timeout=5)
        os.close(controller)
