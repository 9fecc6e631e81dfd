"""One tenant's broken shard: that tenant is parked with an alarm, every other tenant goes on.

A real service loop (thread) over the real Qdrant Edge store, embedded Redis and embedder.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
import redis

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.memory import Layer
from nika_tui.domain.requests import RecallQuery, RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.errors import NikaError, ShardMissing, StoreUnavailable
from nika_tui.services import redis_keys
from nika_tui.services.tenant_alarms import read_alarms
from nika_tui.services.vectors.edge import EdgeVectorStore
from tests.helpers import retry_until
from tests.plugins.memory import RunningService

pytestmark = pytest.mark.embedder


def _req(tenant: str, text: str) -> RememberRequest:
    return RememberRequest(
        tenant_id=tenant, text=text, meta=NikaMeta(timestamp=datetime(2026, 3, 1, tzinfo=UTC))
    )


def _pending(r: redis.Redis) -> int:
    return int(r.xpending(redis_keys.INGEST_STREAM, redis_keys.INGEST_GROUP)["pending"])


@pytest.fixture
def fast_park(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retry parked tenants every half second (the service reads it from its env)."""
    monkeypatch.setenv("NIKA_PARK_RETRY_S", "0.5")


def test_a_removed_shard_parks_its_tenant_only_and_alarms_instead_of_no_memory(
    fast_park: None,
    running_service: RunningService,
    make_tenant: Callable[..., TenantConfig],
    redis_client: redis.Redis,
) -> None:
    make_tenant("tena")
    make_tenant("tenb")
    client = running_service.client
    store = running_service.ctx.vectors
    assert isinstance(store, EdgeVectorStore)
    for tenant in ("tena", "tenb"):
        key = client.remember(_req(tenant, f"{tenant} deploys with ansible from the ops repo"))
        client.wait_ingested(tenant, key, timeout=30)

    shutil.rmtree(store.root / "tena")  # bad luck: the tenant's shards vanish while running

    lost_key = client.remember(_req("tena", "tena rotates the TLS certificates every monday"))
    key_b = client.remember(_req("tenb", "tenb moved its CI from jenkins to github actions"))
    # Before: tenb's write waited behind tena's batch, retried every 2 s without end.
    outcome = client.wait_ingested("tenb", key_b, timeout=20)
    assert outcome["status"]

    with pytest.raises(StoreUnavailable, match="tena's store is failing"):
        client.wait_ingested("tena", lost_key, timeout=20)
    alarms = {a.tenant_id: a for a in read_alarms(redis_client)}
    assert set(alarms) == {"tena"} and alarms["tena"].kind == "ShardMissing"
    assert "missing" in alarms["tena"].reason
    # Visible: the dashboard's status bar and row, and `nika doctor`.
    from nika_tui.cli.doctor_runtime import check_runtime
    from nika_tui.dashboard.redis_source import RedisDashboardSource
    from nika_tui.settings import Settings

    source = RedisDashboardSource(Settings.from_env(), defer_warm_up=True)
    try:
        snap = source.snapshot(datetime.now(UTC))
    finally:
        source.close()
    assert any("ALARM tena" in p for p in snap.problems)
    row = snap.row("tena")
    assert row is not None and any("ingest parked" in p for p in row.problems)
    [doctor] = [c for c in check_runtime(Settings.from_env()) if c.name == "tenant:tena"]
    assert doctor.status == "missing" and "missing" in doctor.detail

    # Recall says alarm, not "no memory for …".
    with pytest.raises(NikaError, match="missing") as caught:
        client.recall(RecallQuery(tenant_id="tena", query="TLS certificates"))
    assert "no memory" not in str(caught.value)
    assert isinstance(caught.value, ShardMissing)
    # tenb's memory still answers while tena is parked.
    hits = client.recall(RecallQuery(tenant_id="tenb", query="which CI does tenb use"))
    assert any("github actions" in h.record.text for h in hits.hits)

    # tena's entry stays in the stream, unacknowledged, across several retries.
    retries_before = time.monotonic()
    retry_until(lambda: time.monotonic() - retries_before > 1.5, what="a few park retries")
    assert _pending(redis_client) == 1
    assert redis_client.xlen(redis_keys.INGEST_STREAM) == 1

    # The operator accepts the loss (documented: delete the marker): the entry is ingested,
    # the alarm clears.
    store.marker("tena", Layer.SEMANTIC).unlink()
    store.marker("tena", Layer.EPISODIC).unlink(missing_ok=True)
    retry_until(lambda: _pending(redis_client) == 0, timeout=20, what="tena's entry ingested")
    # The alarm is cleared just after the acknowledgement (CI saw the gap): wait for it.
    retry_until(lambda: read_alarms(redis_client) == [], what="tena's alarm cleared")
    hits = client.recall(RecallQuery(tenant_id="tena", query="TLS certificates"))
    assert any("TLS" in h.record.text for h in hits.hits)


def test_a_shard_missing_at_start_is_an_alarm_not_a_fresh_empty_store(
    memory_store: EdgeVectorStore,
) -> None:
    from nika_tui.domain.ports import VectorPoint

    point = VectorPoint(
        id="00000000-0000-0000-0000-000000000001",
        vector=[1.0] + [0.0] * 383,
        text="x",
        payload={"tenant_id": "tena", "layer": "semantic", "text": "x", "status": "current"},
    )
    memory_store.upsert("tena", Layer.SEMANTIC, [point])
    memory_store.close()
    shutil.rmtree(memory_store.root / "tena" / "semantic")
    reopened = EdgeVectorStore(memory_store.root, 384, flush_writes=False)
    with pytest.raises(ShardMissing, match="missing"):
        reopened.count("tena", Layer.SEMANTIC)
    with pytest.raises(ShardMissing):
        reopened.upsert("tena", Layer.SEMANTIC, [point])
    assert not (memory_store.root / "tena" / "semantic").exists()
    # A tenant that never had a shard is still simply empty.
    assert reopened.count("tenb", Layer.SEMANTIC) == 0
    reopened.close()
