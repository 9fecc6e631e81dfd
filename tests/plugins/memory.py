"""Memory-engine fixtures: an engine context on real stores, the service loop in a thread.

- ``make_tenant(tenant_id, language="en")``: save a tenant config (rules judge);
- ``engine_ctx``: :class:`EngineContext` on the test's emptied embedded Redis, a Qdrant Edge
  store in the tmp dir and the session's real embedder (mark tests ``@pytest.mark.embedder``);
- ``running_service``: a :class:`MemoryService` looping in a thread over ``engine_ctx``, and a
  :class:`MemoryClient` to talk to it (the kill -9 test runs a real process instead).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import redis

from nika_tui.domain.tenant import Language, TenantConfig

if TYPE_CHECKING:
    from nika_tui.engine.context import EngineContext
    from nika_tui.engine.server.loop import MemoryService
    from nika_tui.services.embeddings import SentenceTransformerEmbedder
    from nika_tui.services.memory_client import MemoryClient
    from nika_tui.services.vectors.edge import EdgeVectorStore


@pytest.fixture
def make_tenant(isolated_env: dict[str, str]) -> Callable[..., TenantConfig]:
    """Create tenants in the test's config dir."""
    from nika_tui.services.config_store import save_tenant

    def make(tenant_id: str, language: str = "en") -> TenantConfig:
        config = TenantConfig(
            tenant_id=tenant_id, display_name=tenant_id.title(), language=Language(language)
        )
        save_tenant(config)
        return config

    return make


class Clock:
    """A settable clock (engine code takes ``now`` from the context, never the wall)."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def memory_store(tmp_path: Path) -> Iterator[EdgeVectorStore]:
    """A Qdrant Edge store configured as the service opens it (flushed per batch, not per
    write), in the test's tmp dir."""
    from nika_tui.services.vectors.edge import EdgeVectorStore

    store = EdgeVectorStore(tmp_path / "memory-qdrant", 384, flush_writes=False)
    yield store
    store.close()


@pytest.fixture
def engine_ctx(
    redis_client: redis.Redis,
    memory_store: EdgeVectorStore,
    embedder: SentenceTransformerEmbedder,
) -> EngineContext:
    """The engine on real stores; its clock is the wall clock (tests may replace it)."""
    from nika_tui.engine.context import EngineContext
    from nika_tui.settings import Settings

    return EngineContext(
        settings=Settings.from_env(),
        redis=redis_client,
        vectors=memory_store,
        embedder=embedder,
    )


@dataclass
class RunningService:
    """A service looping in a thread, and a client on the same Redis."""

    service: MemoryService
    client: MemoryClient
    ctx: EngineContext


@pytest.fixture
def running_service(engine_ctx: EngineContext, redis_url: str) -> Iterator[RunningService]:
    """The memory service loop in a background thread (stopped and joined afterwards)."""
    from nika_tui.engine.server.loop import MemoryService
    from nika_tui.services.memory_client import MemoryClient

    # The service gets its own connection: a redis-py client is not meant to be shared by a
    # thread blocked in XREADGROUP and the test thread.
    own = redis.Redis.from_url(redis_url, decode_responses=True)
    ctx = type(engine_ctx)(
        child_env=engine_ctx.child_env,
        secrets_env=engine_ctx.secrets_env,
        settings=engine_ctx.settings,
        redis=own,
        vectors=engine_ctx.vectors,
        embedder=engine_ctx.embedder,
    )
    service = MemoryService(ctx)
    thread = threading.Thread(target=service.run, name="memory-service", daemon=True)
    thread.start()
    client = MemoryClient(redis.Redis.from_url(redis_url, decode_responses=True), timeout=30.0)
    from tests.helpers import retry_until

    retry_until(client.service_alive, timeout=10, what="service heartbeat")
    yield RunningService(service, client, ctx)
    service.stop()
    thread.join(timeout=30)
    assert not thread.is_alive(), "the service thread did not stop"
    own.close()


def utc(*args: int) -> datetime:
    """``datetime(*args, tzinfo=UTC)``."""
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]
