"""The hook server's process, found by its socket (shared by the hook-server tests)."""

from __future__ import annotations

import os
from pathlib import Path

from nika_tui.hookd.client import socket_path


def _server_pid(env: dict[str, str]) -> int | None:
    """The pid of the server listening on this data dir's socket, if one does."""
    path = socket_path(env)
    if not os.path.exists(path):
        return None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"nika_tui.hookd.server" in cmdline and os.fsencode(path) in cmdline:
            return int(entry.name)
    return None
