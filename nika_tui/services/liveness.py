"""Is a process really alive? By pid (existing and not a zombie), beside the heartbeat key.

The service's heartbeat has a 10 s TTL: after ``kill -9`` it still says "running" for up to
10 s, and a killed child that nobody reaped stays a zombie that ``kill(pid, 0)`` reports as
alive. ``nika up``, the dashboard's auto-start and ``nika down`` therefore trust a heartbeat
only when its pid is a live process on this host (a heartbeat from another host is trusted
until its TTL runs out: that pid cannot be checked from here).
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def process_alive(pid: int) -> bool:
    """True when ``pid`` exists and is not a zombie (``/proc/<pid>/stat`` state ``Z``)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (macOS): existence is all we can tell
    # The state follows the command name, which is in parentheses and may contain spaces.
    state = stat[stat.rfind(")") + 2 : stat.rfind(")") + 3]
    return state not in {"Z", "X"}


def reap(pid: int) -> None:
    """Collect ``pid``'s exit status if it is our child (a no-op otherwise)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def heartbeat_live(info: Mapping[str, Any] | None) -> bool:
    """True when a heartbeat names a live process (or one on another host, unverifiable)."""
    if not info:
        return False
    try:
        pid = int(info.get("pid", 0))
    except (TypeError, ValueError):
        return False
    host = info.get("host")
    if host is not None and host != socket.gethostname():
        return True
    return process_alive(pid)
