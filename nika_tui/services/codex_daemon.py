"""Codex's background app-server: stopped with the kernel, so nothing of a tenant outlives it.

Codex 0.171's TUI starts a managed app-server daemon from its ``CODEX_HOME``
(``$CODEX_HOME/packages/app-server-daemon/…/codex app-server --managed-daemon``, plus a
``daemon pid-update-loop``) that keeps running after ``/quit`` ("Disconnected from this task.
Any running work continues."). A kernel stop asks Codex to stop it (``codex app-server daemon
stop`` with the tenant's ``CODEX_HOME``), then ends what is left of *that tenant's* daemon: the
processes whose executable lives under its own ``CODEX_HOME`` — never a process by name.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

DAEMON_STOP_TIMEOUT_S = 5.0
GRACE_S = 2.0


def daemon_pids(codex_home: Path) -> list[int]:
    """PIDs whose executable is under ``codex_home/packages`` (the tenant's own daemon)."""
    root = str(codex_home.resolve() / "packages") + os.sep
    pids: list[int] = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if not entry.name.isdigit():
            continue
        try:
            exe = os.readlink(entry / "exe")
        except OSError:
            continue  # gone, or not ours to read
        if exe.startswith(root):
            pids.append(int(entry.name))
    return pids


def stop_daemon(codex_bin: str | None, codex_home: Path, child_env: Mapping[str, str]) -> list[int]:
    """Stop the tenant's Codex app-server daemon; the PIDs that had to be signalled.

    Never raises: a kernel stop goes on whatever happens here.
    """
    if not (codex_home / "packages").is_dir():
        return []  # this CODEX_HOME never started a daemon
    if codex_bin:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(
                [codex_bin, "app-server", "daemon", "stop"],
                env={**child_env, "CODEX_HOME": str(codex_home)},
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=DAEMON_STOP_TIMEOUT_S,
                check=False,
            )
    signalled = daemon_pids(codex_home)
    left = list(signalled)
    for pid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    while left and time.monotonic() < deadline:
        left = [p for p in left if Path(f"/proc/{p}").exists()]
        time.sleep(0.05)
    for pid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return signalled
