"""``nika setup`` on a real pseudo-terminal: Ctrl-C at a prompt writes nothing and exits 130."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _read_until(fd: int, needle: bytes, limit_s: float = 30.0) -> bytes:
    seen = b""
    while needle not in seen:
        ready, _, _ = select.select([fd], [], [], limit_s)
        assert ready, f"no {needle!r} on the terminal; got {seen[-300:]!r}"
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if b"\x1b[6n" in chunk:  # answer prompt_toolkit's cursor-position request
            os.write(fd, b"\x1b[1;1R")
    return seen


def test_ctrl_c_at_a_prompt_exits_130_and_writes_nothing(tmp_path: Path) -> None:
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NIKA_OS_", "XDG_"))} | {
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "PYTHONPATH": str(ROOT),
        "TERM": "xterm",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "nika_tui", "setup"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
        start_new_session=True,
    )
    os.close(slave)
    try:
        _read_until(master, b"Tenant id")
        os.write(master, b"acme\r")
        _read_until(master, b"Display name")
        os.write(master, b"\x03")
        tail = _read_until(master, b"nothing was written")
        assert proc.wait(timeout=30) == 130, tail
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert not (tmp_path / "xdg" / "nika-os" / "tenants" / "acme").exists()


def test_setup_agents_is_the_agent_section() -> None:
    from nika_tui.domain.tenant import AgentCli, TenantConfig
    from nika_tui.services.config_store import save_tenant

    save_tenant(TenantConfig(tenant_id="acme", display_name="Acme", agent_cli=AgentCli.SHELL))
    master, slave = pty.openpty()
    env = os.environ | {"PYTHONPATH": str(ROOT), "TERM": "xterm"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "nika_tui", "setup", "agents", "--tenant", "acme"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
        start_new_session=True,
    )
    os.close(slave)
    try:
        # The name for it: the agent section's question, not "invalid choice".
        _read_until(master, b"Agent CLI for this tenant")
        os.write(master, b"\x03")
        _read_until(master, b"nothing was written")
        assert proc.wait(timeout=30) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
