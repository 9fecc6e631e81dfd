"""A real embedded Redis per test session (its own data dir), flushed between tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from nika_tui.paths import roots
from nika_tui.services.redis_server import ensure_embedded, stop_embedded


@pytest.fixture(scope="session")
def redis_session_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of one embedded redis-server for the whole session."""
    root: Path = tmp_path_factory.mktemp("redis-data")
    env = {"NIKA_OS_DATA_DIR": str(root)}
    url = ensure_embedded(roots(env))
    yield url
    stop_embedded(roots(env))


@pytest.fixture
def redis_url(redis_session_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The session's server, emptied, and exported as REDIS_URL for code under test."""
    client = redis.Redis.from_url(redis_session_url)
    client.flushall()
    monkeypatch.setenv("REDIS_URL", redis_session_url)
    yield redis_session_url
    client.close()


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A decoded client on the test's emptied server."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()
