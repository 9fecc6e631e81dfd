"""Every RPC on memory names its tenant and the service checks it: no tenant, an unknown one or
one held by another worker is refused; "every tenant" callers ask each tenant in turn."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from nika_tui.engine.context import EngineContext
from nika_tui.engine.server.loop import MemoryService
from nika_tui.engine.tenant_scope import check_rpc_tenant
from nika_tui.engine.worker import Worker
from nika_tui.errors import NikaError, TenantNotFound, ValidationFailed
from nika_tui.services.memory_client import MemoryClient
from tests.helpers import retry_until


@pytest.fixture
def served(debt_ctx: EngineContext, redis_url: str, tmp_path: Path) -> Iterator[MemoryClient]:
    """The service loop as worker ``wa`` (lease mode, as `nika serve` runs it) in a thread."""
    own = redis.Redis.from_url(redis_url, decode_responses=True)
    ctx = EngineContext(settings=debt_ctx.settings, redis=own,
                        child_env=debt_ctx.child_env, secrets_env=debt_ctx.secrets_env,
                        vectors=debt_ctx.vectors, embedder=debt_ctx.embedder,
                        clock=debt_ctx.clock)  # fmt: skip
    worker = Worker(own, "memory-service", tmp_path / "wa", debt_ctx.vectors, ttl_s=30)
    service = MemoryService(ctx, embed_ahead=False, worker=worker)
    thread = threading.Thread(target=service.run, daemon=True)
    thread.start()
    client = MemoryClient(redis.Redis.from_url(redis_url, decode_responses=True), timeout=30.0)
    retry_until(client.service_alive, timeout=10, what="service heartbeat")
    yield client
    service.stop()
    thread.join(timeout=30)
    own.close()


def test_an_rpc_without_a_known_tenant_is_refused(served: MemoryClient) -> None:
    with pytest.raises(ValidationFailed, match="stats needs a tenant_id"):
        served.call("stats", {})
    with pytest.raises(ValidationFailed, match="audit needs a tenant_id"):
        served.call("audit", {"seed": 1})
    with pytest.raises(TenantNotFound):
        served.call("stats", {"tenant_id": "nobody"})
    assert "acme" in served.call("stats", {"tenant_id": "acme"})["tenants"]
    assert served.call("ping", {})["pid"] == os.getpid(), "ping touches no tenant"


def test_a_malformed_body_is_refused_naming_the_op_and_key_and_an_old_body_is_answered(
    served: MemoryClient,
) -> None:
    """The service reads each body with its op's request model (decision 305)."""
    with pytest.raises(ValidationFailed, match="missing 'memory_id' in the history request"):
        served.call("history", {"tenant_id": "acme"})
    with pytest.raises(ValidationFailed, match="bad recent request: 'limit' must be an integer"):
        served.call("recent", {"tenant_id": "acme", "limit": "ten"})
    # A body built by hand, as clients did before the models, with a key the op does not know.
    old = served.call("recent", {"tenant_id": "acme", "project_id": "", "limit": 3, "x": 1})
    assert set(old) == {"records"}


def test_the_cli_asks_every_tenant_in_turn(served: MemoryClient, make_tenant: Any) -> None:
    make_tenant("beta")
    out = subprocess.run(
        [sys.executable, "-m", "nika_tui", "audit", "--seed", "1", "--no-act", "--json"],
        capture_output=True, text=True, env=dict(os.environ), check=False, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert sorted(json.loads(out.stdout)["tenants"]) == ["acme", "beta"]


def test_a_tenant_held_elsewhere_is_refused(debt_ctx: EngineContext) -> None:
    with pytest.raises(NikaError, match="does not hold tenant acme"):
        check_rpc_tenant(debt_ctx, "recall", {"tenant_id": "acme"}, lambda _t: False)
    check_rpc_tenant(debt_ctx, "recall", {"tenant_id": "acme"}, lambda _t: True)
