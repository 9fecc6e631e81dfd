"""Redis URLs with IPv6 literals, read right everywhere nika reads one (audit r18 gap 5).

The checks run against the embedded redis-server binary listening on ``[::1]`` with a password
(skipped only where this machine has no IPv6 loopback).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
import redis

from nika_tui.errors import ConfigError
from nika_tui.scale import cloud_init
from nika_tui.scale.workers import join_url
from nika_tui.services.redis_server import connect, redis_server_binary
from nika_tui.services.redis_urls import check_redis_url, redact
from nika_tui.settings import Settings
from tests.helpers import retry_until

PASSWORD = "v6-Secret-pw"


def _v6_port() -> int:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
            return int(s.getsockname()[1])
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")


@pytest.fixture
def v6_redis(tmp_path: Path) -> Iterator[int]:
    """The embedded redis-server on [::1] only, with a password; its port."""
    port = _v6_port()
    proc = subprocess.Popen(
        [str(redis_server_binary()), "--bind", "::1", "--port", str(port), "--requirepass",
         PASSWORD, "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    probe = redis.Redis(host="::1", port=port, password=PASSWORD, socket_timeout=1)

    def up() -> bool:
        try:
            return bool(probe.ping())
        except redis.RedisError:
            return False

    try:
        retry_until(up, timeout=30, interval=0.05, what="redis-server on [::1]")
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_redis_url_join_and_cloud_init_reach_an_ipv6_redis(v6_redis: int, tmp_path: Path) -> None:
    port = v6_redis
    full = f"redis://:{PASSWORD}@[::1]:{port}/0"
    # REDIS_URL, as every nika process reads it.
    assert connect(Settings.from_env({"REDIS_URL": full}), start=False).ping()
    # The worker's side: the password-less URL and NIKA_REDIS_PASSWORD_FILE.
    secret = tmp_path / "redis_password"
    secret.write_text(PASSWORD + "\n")
    secret.chmod(0o600)
    settings = Settings.from_env({"NIKA_REDIS_PASSWORD_FILE": str(secret)})
    joined = join_url(f"redis://[::1]:{port}/0", settings)
    assert "[::1]" in joined
    assert redis.Redis.from_url(joined).ping()
    # What the instance is told to join: brackets kept, password gone.
    stripped = cloud_init.strip_password(full)
    assert stripped == f"redis://[::1]:{port}/0"
    assert f'"serve" "--join" "{stripped}"' in cloud_init.service_unit(full)
    assert redis.Redis.from_url(join_url(stripped, settings)).ping()


def test_the_cli_reads_an_ipv6_redis_url(v6_redis: int) -> None:
    env = dict(os.environ, REDIS_URL=f"redis://:{PASSWORD}@[::1]:{v6_redis}/0")
    out = subprocess.run([sys.executable, "-m", "nika_tui", "scale", "workers", "--json"],
                         env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert PASSWORD not in out.stdout + out.stderr


class UrlCase(NamedTuple):
    test_id: str
    url: str
    ok: bool
    shown: str
    """What a message shows of it."""


CASES = [
    UrlCase("v6-with-password", "redis://:pw@[::1]:6379/0", True, "redis://***@[::1]:6379/0"),
    UrlCase("v6-no-port", "rediss://[2001:db8::7]/1", True, "rediss://[2001:db8::7]/1"),
    UrlCase("v4", "redis://10.0.0.2:6379/0", True, "redis://10.0.0.2:6379/0"),
    UrlCase("unix", "unix:///run/nika/redis.sock", True, "unix:///run/nika/redis.sock"),
    UrlCase("v6-without-brackets", "redis://::1:6379/0", False, "redis://::1:6379/0"),
    UrlCase("unclosed-bracket", "redis://[::1:6379/0", False, "<unreadable URL>"),
    UrlCase("port-out-of-range", "redis://[::1]:70000/0", False, "redis://[::1]:70000/0"),
    UrlCase("no-scheme", "[::1]:6379", False, "[::1]:6379"),
    UrlCase("password-in-query", "redis://[::1]:6379/0?password=pw", True,
            "redis://[::1]:6379/0?password=***"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_a_redis_url_is_checked_and_shown_without_secrets(case: UrlCase) -> None:
    assert redact(case.url) == case.shown
    if case.ok:
        assert check_redis_url(f" {case.url} ") == case.url
        return
    with pytest.raises(ConfigError) as err:
        check_redis_url(case.url)
    assert "REDIS_URL" in err.value.message
    assert "redis://[::1]:6379/0" in (err.value.hint or "")
    assert "pw" not in err.value.message


def test_a_bad_redis_url_is_one_line_from_the_cli() -> None:
    env = dict(os.environ, REDIS_URL="redis://::1:6379/0")
    out = subprocess.run([sys.executable, "-m", "nika_tui", "scale", "workers"], env=env,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    assert "REDIS_URL is not a valid Redis URL" in out.stderr
