"""Ingest: deterministic ids, replays that overwrite, duplicates, refusals, the service path."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from nika_tui.domain.envelope import Domain, NikaMeta
from nika_tui.domain.memory import Layer, MemoryRecord, Status, memory_id
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.engine.context import EngineContext
from nika_tui.engine.ingest import IngestOutcome, ingest, ingest_batch
from nika_tui.errors import StoreUnavailable, TenantNotFound
from nika_tui.services import redis_keys
from nika_tui.services.memory_client import idempotency_key
from tests.plugins.memory import Clock, RunningService

pytestmark = pytest.mark.embedder

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _req(text: str, tenant: str = "acme", key: str = "", project: str = "web") -> RememberRequest:
    meta = NikaMeta(timestamp=T0, project_id=project, domain=Domain.INFRA)
    return RememberRequest(tenant_id=tenant, text=text, meta=meta, idempotency_key=key)


def _records(ctx: EngineContext, tenant: str = "acme") -> list[MemoryRecord]:
    return [
        MemoryRecord.from_payload(dict(p.payload))
        for p in ctx.vectors.scroll(tenant, Layer.SEMANTIC)
    ]


def test_ingest_stores_the_record_with_its_envelope_and_logs_it(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    out = ingest(engine_ctx, _req("The staging server is staging-1.acme.internal"))
    key = idempotency_key(_req("The staging server is staging-1.acme.internal"))
    assert out.id == memory_id("acme", key)
    [rec] = _records(engine_ctx)
    assert rec.id == out.id
    assert rec.status is Status.CURRENT
    assert rec.meta.project_id == "web" and rec.meta.domain is Domain.INFRA
    assert rec.valid_from == T0
    kinds = [line.data["kind"] for line in engine_ctx.bus("acme").read() if line.data]
    assert kinds == ["memory.ingested"]


def test_replaying_a_request_overwrites_the_same_point(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    clock = Clock(datetime(2026, 3, 1, 10, tzinfo=UTC))
    engine_ctx.clock = clock
    first = ingest(engine_ctx, _req("We deploy on Thursdays"))
    clock.now = datetime(2026, 3, 2, tzinfo=UTC)
    again = ingest(engine_ctx, _req("We deploy on Thursdays"))
    assert again.id == first.id
    assert again.status == "replayed"
    [rec] = _records(engine_ctx)
    assert rec.asserted_at == datetime(2026, 3, 1, 10, tzinfo=UTC)  # first learnt, kept
    kinds = [line.data["kind"] for line in engine_ctx.bus("acme").read() if line.data]
    assert kinds == ["memory.ingested"]


def test_same_text_under_another_key_is_a_duplicate(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    first = ingest(engine_ctx, _req("Alice owns the billing service", key="hook-event-1"))
    second = ingest(engine_ctx, _req("Alice owns the billing service", key="hook-event-2"))
    assert second.status == "duplicate"
    assert second.duplicate_of == first.id
    assert len(_records(engine_ctx)) == 1


def test_unknown_tenant_is_refused(engine_ctx: EngineContext) -> None:
    with pytest.raises(TenantNotFound):
        ingest(engine_ctx, _req("anything", tenant="ghost"))


def test_remember_through_the_service_returns_the_point_id(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    client = running_service.client
    key = client.remember(_req("The CI runs on GitHub Actions"))
    outcome = client.wait_ingested("acme", key, timeout=30)
    assert outcome["id"] == memory_id("acme", key)
    assert outcome["status"] == "ingested"
    stored = running_service.ctx.vectors.retrieve("acme", Layer.SEMANTIC, [outcome["id"]])
    assert stored and stored[0].payload["text"] == "The CI runs on GitHub Actions"
    # Acknowledged and removed from the stream: nothing pending.
    assert client.redis.xlen(redis_keys.INGEST_STREAM) == 0


def test_a_refused_entry_goes_to_the_dead_letter_stream_and_the_writer_is_told(
    running_service: RunningService,
) -> None:
    client = running_service.client
    key = client.remember(_req("a fact for a tenant nobody created", tenant="ghost"))
    with pytest.raises(TenantNotFound):
        client.wait_ingested("ghost", key, timeout=30)
    client.redis.xadd(redis_keys.INGEST_STREAM, {"req": "{not json"})
    from tests.helpers import retry_until

    dead = retry_until(
        lambda: rows if len(rows := client.redis.xrange(redis_keys.INGEST_DEAD)) == 2 else None,
        timeout=30,
        what="two dead letters",
    )
    kinds = [fields["kind"] for _, fields in dead]
    assert kinds == ["TenantNotFound", "ValidationFailed"]
    assert json.loads(dead[0][1]["req"])["tenant_id"] == "ghost"  # kept, not lost
    assert client.redis.xlen(redis_keys.INGEST_STREAM) == 0


def test_service_recreates_a_deleted_stream_and_its_group(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    client = running_service.client
    client.redis.delete(redis_keys.INGEST_STREAM)  # e.g. an operator's mistake
    key = client.remember(_req("Secrets are stored in Vault under kv/acme"))
    assert client.wait_ingested("acme", key, timeout=30)["status"] == "ingested"


def test_a_debt_pause_defers_bulk_writes_only_and_loses_none(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    from nika_tui.domain.envelope import Trigger

    make_tenant("acme")
    client = running_service.client
    client.redis.set(redis_keys.ingest_paused("acme"), "audit: critical duplicate rate")
    bulk = _req("Nightly import: the search index has 12 shards")
    bulk = bulk.model_copy(update={"meta": bulk.meta.model_copy(update={"trigger": Trigger.CRON})})
    bulk_key = client.remember(bulk)
    person_key = client.remember(_req("Bob prefers small pull requests"))
    # The person's write goes through while the bulk one waits, pending (not acked, not lost).
    assert client.wait_ingested("acme", person_key, timeout=30)["status"] == "ingested"
    pending = client.redis.xpending(redis_keys.INGEST_STREAM, redis_keys.INGEST_GROUP)
    assert pending["pending"] == 1
    assert not running_service.ctx.vectors.retrieve(
        "acme", Layer.SEMANTIC, [memory_id("acme", bulk_key)]
    )
    client.redis.delete(redis_keys.ingest_paused("acme"))
    assert client.wait_ingested("acme", bulk_key, timeout=30)["status"] == "ingested"
    assert client.redis.xlen(redis_keys.INGEST_STREAM) == 0


STAGING = "The staging server is staging-1.acme.internal"
HEDGED_MOVES = [
    "The staging server might move to staging-3.acme.internal, not sure yet",
    "Maybe the staging server moves to staging-4.acme.internal, to be confirmed",
]


def _kinds(ctx: EngineContext) -> list[str]:
    return [line.data["kind"] for line in ctx.bus("acme").read() if line.data]


@pytest.fixture
def staging_stored(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> EngineContext:
    """Tenant ``acme`` with the staging-server fact stored: what the hedged moves question."""
    make_tenant("acme")
    ingest(engine_ctx, _req(STAGING))
    return engine_ctx


def _ingest_hedged_moves(ctx: EngineContext) -> set[str]:
    """Ingest the hedged moves as one batch; the review ids their outcomes name."""
    outcomes = ingest_batch(ctx, [_req(t) for t in HEDGED_MOVES])
    return {r for o in outcomes if isinstance(o, IngestOutcome) for r in o.reviews}


def _queued(ctx: EngineContext) -> set[str]:
    from nika_tui.engine.review import list_items

    return {item.id for item in list_items(ctx.redis, "acme")}


def test_a_batch_queues_its_uncertain_pairs_in_one_bus_write_before_its_ingest_lines(
    staging_stored: EngineContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nika_tui.services.bus import Bus

    engine_ctx = staging_stored
    writes: list[list[str]] = []
    real_append_many = Bus.append_many

    def counted(bus: Bus, items: Any) -> Any:
        writes.append([kind for kind, *_ in items])
        return real_append_many(bus, items)

    monkeypatch.setattr(Bus, "append_many", counted)
    reviews = _ingest_hedged_moves(engine_ctx)
    assert len(reviews) >= 2  # each hedged move against the stored fact, at least
    assert _queued(engine_ctx) == reviews
    # One write for all the batch's review requests, then one for its ingest lines.
    assert writes == [["review.requested"] * len(reviews), ["memory.ingested"] * 2]
    assert _kinds(engine_ctx)[1:] == ["review.requested"] * len(reviews) + ["memory.ingested"] * 2


def test_a_batch_that_fails_before_queueing_its_reviews_queues_them_once_on_replay(
    staging_stored: EngineContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nika_tui.engine import ingest as ingest_module
    from nika_tui.engine.review import enqueue_many

    engine_ctx = staging_stored

    def redis_gone(*_: Any) -> Any:
        raise StoreUnavailable("Redis went away", "start it again")

    monkeypatch.setattr(ingest_module, "enqueue_many", redis_gone)
    with pytest.raises(StoreUnavailable):
        _ingest_hedged_moves(engine_ctx)
    # Nothing queued and nothing logged: the service acknowledges nothing, so it replays.
    assert _queued(engine_ctx) == set()
    assert _kinds(engine_ctx) == ["memory.ingested"]
    monkeypatch.setattr(ingest_module, "enqueue_many", enqueue_many)
    for _ in range(2):  # the replay, then a second replay of the same entries
        reviews = _ingest_hedged_moves(engine_ctx)
    assert len(reviews) >= 2
    assert _queued(engine_ctx) == reviews
    assert _kinds(engine_ctx).count("review.requested") == len(reviews)
