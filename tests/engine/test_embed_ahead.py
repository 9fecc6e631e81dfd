"""Embed-ahead: batch k+1 is embedded on a worker thread while batch k is stored, and nothing
about durability changes (ack after flush, crash replay, failure path, RPCs between batches).

The service runs step by step in the test thread on the real embedded Redis, Qdrant Edge and
the real embedder. Small batches (``BATCH`` = 4) give two batches from eight remembers. What
happened, and in which order, is recorded by a wrapper around the real embedder and by a
service subclass that logs each flush, ack and RPC after the real one returned.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
import redis

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.memory import Layer, memory_id
from nika_tui.domain.ports import Embedder
from nika_tui.domain.requests import RecallQuery, RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.engine.context import EngineContext
from nika_tui.engine.embed_ahead import EmbedAhead
from nika_tui.engine.server import loop as loop_module
from nika_tui.engine.server import pipeline as pipeline_module
from nika_tui.engine.server.loop import MemoryService
from nika_tui.errors import EmbedderUnavailable, StoreUnavailable
from nika_tui.services import redis_keys
from nika_tui.services.memory_client import MemoryClient
from nika_tui.settings import Settings
from tests.helpers import retry_until

pytestmark = pytest.mark.embedder

TENANT = "ahead"
Event = tuple[str, str, int]
"""(what, batch label, thread id)."""


def _label(texts: Sequence[str]) -> str:
    """``b1`` / ``b2`` for a batch of remembered facts, ``query`` for anything else."""
    labels = sorted({t.split()[0] for t in texts})
    return "+".join(labels) if all(lb.startswith("b") for lb in labels) else "query"


class RecordingEmbedder:
    """The real embedder; records the start and end of each call, optionally fails once."""

    def __init__(self, inner: Embedder, events: list[Event], fail_once_on: str = "") -> None:
        self.inner = inner
        self.events = events
        self.fail_once_on = fail_once_on

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def name(self) -> str:
        return self.inner.name

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        label = _label(texts)
        self.events.append(("embed-start", label, threading.get_ident()))
        if self.fail_once_on and label == self.fail_once_on:
            self.fail_once_on = ""
            raise EmbedderUnavailable("embeddings endpoint down", "start it")
        vectors = self.inner.embed(texts)
        self.events.append(("embed-end", label, threading.get_ident()))
        return vectors


class RecordingService(MemoryService):
    """The real service; each flush, ack and RPC is logged once it has returned."""

    def __init__(self, ctx: EngineContext, events: list[Event], **kwargs: Any) -> None:
        super().__init__(ctx, **kwargs)
        self.events = events

    def _flush(self) -> None:
        super()._flush()
        self.events.append(("flushed", "", threading.get_ident()))

    def _flush_for_commit(self, tenants: set[str]) -> set[str]:
        durable = super()._flush_for_commit(tenants)
        self.events.append(("flushed", "", threading.get_ident()))
        return durable

    def _ack(self, acks: Sequence[tuple[str, RememberRequest, Any]]) -> None:
        super()._ack(acks)
        for _entry_id, req, _outcome in acks:
            self.events.append(("acked", _label([req.text]), threading.get_ident()))

    def _handle_rpc(self, entry_id: str, fields: Any) -> None:
        super()._handle_rpc(entry_id, fields)
        self.events.append(("rpc", str(fields.get("op", "")), threading.get_ident()))


@pytest.fixture
def events() -> list[Event]:
    return []


@pytest.fixture
def queued(
    engine_ctx: EngineContext,
    make_tenant: Callable[..., TenantConfig],
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[set[str]]:
    """Two batches of four distinct facts queued (``BATCH`` = 4); yields their point ids."""
    monkeypatch.setattr(loop_module, "BATCH", 4)  # the loop reads, the pipeline reads ahead
    monkeypatch.setattr(pipeline_module, "BATCH", 4)
    make_tenant(TENANT)
    client = MemoryClient(engine_ctx.redis)
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    keys = [
        client.remember(
            RememberRequest(
                tenant_id=TENANT,
                text=f"b{b} fact {i}: service-{b}-{i} listens on port {10000 + 10 * b + i}",
                meta=NikaMeta(timestamp=t0, project_id=f"p{b}-{i}"),  # no supersede
            )
        )
        for b in (1, 2)
        for i in range(4)
    ]
    yield {memory_id(TENANT, k) for k in keys}


def _service(ctx: EngineContext, events: list[Event], fail_once_on: str = "") -> RecordingService:
    ctx.embedder = RecordingEmbedder(ctx.embedder, events, fail_once_on)
    service = RecordingService(ctx, events)
    service.setup()
    return service


def _stored(ctx: EngineContext) -> list[str]:
    return [p.id for p in ctx.vectors.scroll(TENANT, Layer.SEMANTIC)]


def _pending(r: redis.Redis) -> int:
    return int(r.xpending(redis_keys.INGEST_STREAM, redis_keys.INGEST_GROUP)["pending"])


def _loop_events(events: list[Event]) -> list[tuple[str, str]]:
    return [(what, label) for what, label, _ in events if not what.startswith("embed")]


def _index(events: list[Event], what: str, label: str) -> int:
    return next(i for i, (w, lb, _) in enumerate(events) if (w, lb) == (what, label))


def test_the_next_batch_is_embedded_on_a_worker_before_this_one_is_acked(
    engine_ctx: EngineContext, queued: set[str], events: list[Event]
) -> None:
    service = _service(engine_ctx, events)
    service.step(block_ms=10)
    # Batch 1 is stored; batch 2 is read (delivered, unacknowledged) but not stored yet, and
    # batch 1 waits to share batch 2's flush and acks (group commit under a backlog).
    assert len(_stored(engine_ctx)) == 4
    assert _pending(engine_ctx.redis) == 8
    service.step(block_ms=10)
    assert set(_stored(engine_ctx)) == queued
    assert engine_ctx.redis.xlen(redis_keys.INGEST_STREAM) == 0

    # Batch 2's embedding started before batch 1 was acknowledged, on another thread.
    assert _index(events, "embed-start", "b2") < _index(events, "acked", "b1")
    loop = threading.get_ident()
    assert {t for what, lb, t in events if what == "embed-start" and lb == "b2"} != {loop}
    # Both batches are acknowledged after one flush that follows them both, never before it.
    assert _loop_events(events) == [
        ("flushed", ""),
        *[("acked", "b1")] * 4,
        *[("acked", "b2")] * 4,
    ]


def test_with_embed_ahead_off_nothing_is_read_ahead(
    engine_ctx: EngineContext, queued: set[str], events: list[Event]
) -> None:
    engine_ctx.embedder = RecordingEmbedder(engine_ctx.embedder, events)
    service = RecordingService(engine_ctx, events, embed_ahead=False)
    service.setup()
    service.step(block_ms=10)
    assert _pending(engine_ctx.redis) == 0  # batch 2 not even read
    assert {t for what, _, t in events if what == "embed-start"} == {threading.get_ident()}
    service.step(block_ms=10)
    assert set(_stored(engine_ctx)) == queued


def test_a_batch_read_ahead_survives_a_crash_and_is_stored_exactly_once(
    engine_ctx: EngineContext, queued: set[str], events: list[Event]
) -> None:
    _service(engine_ctx, events).step(block_ms=10)
    assert _pending(engine_ctx.redis) == 8  # batch 1 stored, not committed; batch 2 read
    # kill -9 now: the object is abandoned mid-pipeline; a new service starts on the same
    # stores and replays the unacknowledged entries first.
    restarted = MemoryService(engine_ctx)
    restarted.setup()
    restarted.step(block_ms=10)
    ids = _stored(engine_ctx)
    assert len(ids) == 8 and set(ids) == queued
    assert engine_ctx.redis.xlen(redis_keys.INGEST_STREAM) == 0
    assert engine_ctx.redis.xlen(redis_keys.INGEST_DEAD) == 0


def test_an_embedder_error_in_the_batch_read_ahead_takes_the_failure_path(
    engine_ctx: EngineContext, queued: set[str], events: list[Event]
) -> None:
    service = _service(engine_ctx, events, fail_once_on="b2")
    service.step(block_ms=10)  # batch 2's embedding fails on the worker, unnoticed so far
    assert len(_stored(engine_ctx)) == 4
    with pytest.raises(EmbedderUnavailable):
        service.step(block_ms=10)  # ...and surfaces when batch 2 is to be stored
    # Nothing of batch 2 acknowledged, stored or dead-lettered: it waits, pending; so does
    # batch 1, stored but not yet flushed with it (acked only after a flush, or replayed).
    assert len(_stored(engine_ctx)) == 4
    assert _pending(engine_ctx.redis) == 8
    assert [e for e in _loop_events(events) if e[0] == "acked"] == []
    assert engine_ctx.redis.xlen(redis_keys.INGEST_DEAD) == 0
    # As before embed-ahead, the service stops on it; the restarted one replays batch 2.
    restarted = MemoryService(engine_ctx)
    restarted.setup()
    restarted.step(block_ms=10)
    ids = _stored(engine_ctx)
    assert len(ids) == 8 and set(ids) == queued
    assert engine_ctx.redis.xlen(redis_keys.INGEST_STREAM) == 0


def test_rpcs_are_answered_between_a_batch_and_the_one_read_ahead(
    engine_ctx: EngineContext, queued: set[str], events: list[Event], redis_url: str
) -> None:
    service = _service(engine_ctx, events)
    service.beat(force=True)  # the client calls only a live service
    service.step(block_ms=10)
    client = MemoryClient(redis.Redis.from_url(redis_url, decode_responses=True), timeout=30)
    answers: list[Any] = []
    query = RecallQuery(tenant_id=TENANT, query="which port does the service listen on")
    caller = threading.Thread(target=lambda: answers.append(client.recall(query)))
    caller.start()
    retry_until(lambda: engine_ctx.redis.xlen(redis_keys.RPC_STREAM), what="the recall queued")
    service.step(block_ms=10)
    caller.join(timeout=30)
    # Answered between the batches: it finds batch 1's facts (stored, their commit shared
    # with batch 2) and none of batch 2's yet.
    assert answers and answers[0].hits
    assert {hit.record.text.split()[0] for hit in answers[0].hits} == {"b1"}
    assert _loop_events(events) == [
        ("rpc", "recall"),
        ("flushed", ""),
        *[("acked", "b1")] * 4,
        *[("acked", "b2")] * 4,
    ]


def _remember_facts(ctx: EngineContext, label: str, n: int) -> None:
    """Queue ``n`` facts labelled ``label``, each in its own project (no supersede)."""
    client = MemoryClient(ctx.redis)
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    for i in range(n):
        client.remember(
            RememberRequest(
                tenant_id=TENANT,
                text=f"{label} fact {i}",
                meta=NikaMeta(timestamp=t0, project_id=f"{label}-{i}"),
            )
        )


def test_a_batch_with_nothing_behind_it_is_committed_at_once(
    engine_ctx: EngineContext,
    make_tenant: Callable[..., TenantConfig],
    events: list[Event],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(loop_module, "BATCH", 4)  # the loop reads, the pipeline reads ahead
    monkeypatch.setattr(pipeline_module, "BATCH", 4)
    make_tenant(TENANT)
    _remember_facts(engine_ctx, "b1", 3)
    service = _service(engine_ctx, events)
    service.step(block_ms=10)
    assert _pending(engine_ctx.redis) == 0
    assert _loop_events(events) == [("flushed", ""), *[("acked", "b1")] * 3]


def test_three_batches_make_at_most_two_per_flush(
    engine_ctx: EngineContext, queued: set[str], events: list[Event]
) -> None:
    _remember_facts(engine_ctx, "b3", 4)
    service = _service(engine_ctx, events)
    for _ in range(3):
        service.step(block_ms=10)
    assert len(_stored(engine_ctx)) == 12
    assert _pending(engine_ctx.redis) == 0
    assert _loop_events(events) == [
        ("flushed", ""),
        *[("acked", "b1")] * 4,
        *[("acked", "b2")] * 4,
        ("flushed", ""),
        *[("acked", "b3")] * 4,
    ]


def test_embed_calls_never_overlap_whichever_thread_makes_them(
    embedder: Embedder, events: list[Event]
) -> None:
    """A query embedded in the loop thread waits for the batch on the worker (one lock): the
    Hugging Face fast tokenizer can fail with "Already borrowed" when two threads share it."""
    ahead = EmbedAhead(RecordingEmbedder(embedder, events))
    try:
        batch = [f"b9 fact {i}: a sentence long enough to keep the model busy" for i in range(256)]
        pending = ahead.submit(batch)
        retry_until(lambda: events, what="the batch started on the worker")
        ahead.embedder.embed(["which fact is it"])  # the loop thread's recall query
        assert len(pending.result()) == 256
    finally:
        ahead.close()
    assert [(what, label) for what, label, _ in events] == [
        ("embed-start", "b9"),
        ("embed-end", "b9"),
        ("embed-start", "query"),
        ("embed-end", "query"),
    ]


def test_a_failed_group_flush_acknowledges_nothing_and_the_drain_stores_each_once(
    engine_ctx: EngineContext, queued: set[str], events: list[Event]
) -> None:
    # Since per-tenant fault isolation (issue 15) a failed flush parks its tenant instead of
    # stopping the service; released at the next retry (0 s here), the drain replays it.
    engine_ctx.settings = Settings.from_env({**engine_ctx.child_env, "NIKA_PARK_RETRY_S": "0"})
    service = _service(engine_ctx, events)
    real_flush = engine_ctx.vectors.flush_tenant  # type: ignore[attr-defined]
    failures = [StoreUnavailable("disk full", "free some space")]

    def flaky_flush(tenant_id: str) -> None:
        if failures:
            raise failures.pop()
        real_flush(tenant_id)

    engine_ctx.vectors.flush_tenant = flaky_flush  # type: ignore[attr-defined]
    service.step(block_ms=10)  # batch 1 stored, its commit waits for batch 2
    service.step(block_ms=10)  # batch 2 stored, the group's flush fails: the tenant is parked
    assert service.faults.is_parked(TENANT)
    assert _pending(engine_ctx.redis) == 8
    assert [e for e in _loop_events(events) if e[0] == "acked"] == []
    service.step(block_ms=10)  # released: the drain replays every pending entry
    assert set(_stored(engine_ctx)) == queued
    assert _pending(engine_ctx.redis) == 0
    acked = [label for what, label in _loop_events(events) if what == "acked"]
    assert sorted(acked) == ["b1"] * 4 + ["b2"] * 4  # each entry acknowledged once
    done = engine_ctx.redis.keys(redis_keys.ingest_done(TENANT, "*"))
    assert len(done) == 8 and all(engine_ctx.redis.llen(k) == 1 for k in done)
