"""A tenant held by a reset that was killed: its entries were re-delivered on purpose while it
was held, so the restarted service stores them instead of dead-lettering them for "too many
deliveries" (issue 22, decision 505). Without an unfinished reset, the same entry is
dead-lettered: the control that proves the entry was delivered past the limit."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime

import pytest
import redis

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RememberRequest
from nika_tui.engine.context import EngineContext
from nika_tui.engine.reset import journal_path
from nika_tui.engine.server.loop import CONSUMER, MAX_DELIVERIES, MemoryService
from nika_tui.services import redis_keys
from nika_tui.services.files import atomic_write_text
from nika_tui.services.memory_client import MemoryClient
from tests.helpers import retry_until

pytestmark = pytest.mark.embedder
TENANT = "acme"


@pytest.mark.parametrize("stage", ["build", None], ids=["reset-killed-in-build", "no-reset"])
def test_a_held_tenants_redelivered_entry_is_stored_at_start(
    stage: str | None,
    engine_ctx: EngineContext,
    make_tenant,
    redis_url: str,  # type: ignore[no-untyped-def]
) -> None:
    make_tenant(TENANT)
    client = MemoryClient(redis.Redis.from_url(redis_url, decode_responses=True), timeout=30)
    r = engine_ctx.redis
    group, stream = redis_keys.INGEST_GROUP, redis_keys.INGEST_STREAM
    r.xgroup_create(stream, group, id="0", mkstream=True)
    key = client.remember(RememberRequest(
        tenant_id=TENANT, text="The acme cache runs on host cache-3",
        meta=NikaMeta(timestamp=datetime.now(UTC), project_id="shop"),
    ))  # fmt: skip
    # Delivered past the limit, as a held tenant's entry is by every drain while it waits.
    r.xreadgroup(group, CONSUMER, {stream: ">"}, count=10)
    for _ in range(MAX_DELIVERIES):
        r.xreadgroup(group, CONSUMER, {stream: "0"}, count=10)
    if stage is not None:  # what a reset killed in that stage leaves
        path = journal_path(TENANT, engine_ctx.settings.roots)
        atomic_write_text(path, json.dumps({"tenant_id": TENANT, "stage": stage}) + "\n")
    own = redis.Redis.from_url(redis_url, decode_responses=True)
    ctx = type(engine_ctx)(settings=engine_ctx.settings, redis=own,
                           child_env=engine_ctx.child_env, secrets_env=engine_ctx.secrets_env,
                           vectors=engine_ctx.vectors, embedder=engine_ctx.embedder)  # fmt: skip
    service = MemoryService(ctx)
    thread = threading.Thread(target=service.run, daemon=True)
    thread.start()
    try:
        retry_until(client.service_alive, timeout=30, what="service heartbeat")
        if stage is not None:
            assert client.wait_ingested(TENANT, key, timeout=120)["id"]
            assert r.xlen(redis_keys.INGEST_DEAD) == 0
        else:
            dead = retry_until(lambda: r.xrange(redis_keys.INGEST_DEAD), timeout=120,
                               what="the dead letter")  # fmt: skip
            assert "times without success" in dead[0][1]["error"]
    finally:
        service.stop()
        thread.join(timeout=60)
        own.close()
