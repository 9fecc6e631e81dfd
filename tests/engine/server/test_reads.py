"""Reads that never wait (issue 16): the reader threads answer while the loop is inside an
ingest batch or the replay after a crash; overload answers "busy, retry" by the deadline; the
embedder serves queries between bulk micro-batches, batched together; nothing acknowledged is
lost.

Real embedded Redis, Qdrant Edge in a temp dir and the real embedder. To hold the loop inside
a batch the store is wrapped by :class:`GatedStore`, which stops chosen methods at a gate the
test opens: every overlap below is proved by a condition (the loop *is* in ``upsert``), never
by timing.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
import redis

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.memory import Layer
from nika_tui.domain.ports import Embedder
from nika_tui.domain.requests import RecallQuery, RecallResult, RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.engine.context import EngineContext
from nika_tui.engine.embed_gate import EmbedGate
from nika_tui.engine.server.loop import MemoryService
from nika_tui.errors import ServiceBusy
from nika_tui.services import redis_keys
from nika_tui.services.embed_process import ProcessEmbedder
from nika_tui.services.memory_client import MemoryClient
from nika_tui.services.vectors.edge import EdgeVectorStore
from nika_tui.settings import Settings
from tests.helpers import RecordingEmbedder, retry_until

pytestmark = pytest.mark.embedder

TENANT = "reads"
T0 = datetime(2026, 3, 1, tzinfo=UTC)


class GatedStore:
    """The real store; the methods named in ``gated`` wait at a gate while it is closed."""

    def __init__(self, inner: EdgeVectorStore, gated: Sequence[str]) -> None:
        self.inner = inner
        self.gated = set(gated)
        self.open = threading.Event()
        self.open.set()
        self.waiting = threading.Event()
        """Set while a caller waits at the closed gate."""

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name not in self.gated or not callable(attr):
            return attr

        def gated(*args: Any, **kwargs: Any) -> Any:
            if not self.open.is_set():
                self.waiting.set()
                self.open.wait(timeout=120)
                self.waiting.clear()
            return attr(*args, **kwargs)

        return gated


@dataclass
class Served:
    service: MemoryService
    client: MemoryClient
    store: GatedStore


def _fact(i: int, text: str = "") -> RememberRequest:
    return RememberRequest(
        tenant_id=TENANT,
        text=text or f"Fact {i}: service-{i} listens on port {10000 + i}",
        meta=NikaMeta(timestamp=T0, project_id=f"p{i}"),
    )


@pytest.fixture
def serve(
    redis_url: str,
    redis_client: redis.Redis,
    memory_store: EdgeVectorStore,
    embedder: Embedder,
    make_tenant: Callable[..., TenantConfig],
) -> Iterator[Callable[..., Served]]:
    """Start a service (``run`` in a thread, readers on) around a gated store."""
    make_tenant(TENANT)
    started: list[tuple[MemoryService, threading.Thread, redis.Redis]] = []

    def start(
        gated: Sequence[str] = (),
        closed: bool = False,
        readers: int = 2,
        shed_s: float = 0.15,
        model: Embedder | None = None,
        bulk: Callable[[Embedder], Embedder] | None = None,
    ) -> Served:
        store = GatedStore(memory_store, gated)
        if closed:
            store.open.clear()
        own = redis.Redis.from_url(redis_url, decode_responses=True)
        env = {**os.environ, "NIKA_READ_SHED_S": str(shed_s)}
        ctx = EngineContext(
            child_env=env,
            secrets_env=env,
            settings=Settings.from_env(env),
            redis=own,
            vectors=store,
            embedder=model or embedder,
        )  # type: ignore[arg-type]
        service = MemoryService(ctx, readers=readers, bulk_embedder=bulk)
        thread = threading.Thread(target=service.run, daemon=True)
        thread.start()
        started.append((service, thread, own))
        client = MemoryClient(redis.Redis.from_url(redis_url, decode_responses=True), 30.0)
        retry_until(client.service_alive, timeout=30, what="service heartbeat")
        return Served(service, client, store)

    yield start
    for service, thread, own in started:
        service.stop()
        thread.join(timeout=60)
        assert not thread.is_alive()
        own.close()


def _recall(client: MemoryClient, text: str, timeout: float = 30.0) -> RecallResult:
    q = RecallQuery(tenant_id=TENANT, query=text)
    return RecallResult.model_validate(client.call("recall", q.model_dump(mode="json"), timeout))


def test_a_recall_is_answered_while_the_loop_is_inside_an_ingest_batch(
    serve: Callable[..., Served], redis_client: redis.Redis
) -> None:
    s = serve(gated=["upsert"])
    first = s.client.remember(_fact(1))
    s.client.wait_ingested(TENANT, first)

    s.store.open.clear()
    second = s.client.remember(_fact(2))
    retry_until(s.store.waiting.is_set, timeout=60, what="the loop inside the batch's upsert")

    result = _recall(s.client, "which port does service-1 listen on?")

    assert s.store.waiting.is_set(), "the ingest batch was still in progress"
    assert [h.record.text for h in result.hits][:1] == [_fact(1).text]
    assert redis_client.xlen(redis_keys.INGEST_STREAM) == 1  # the second fact: not acked yet
    s.store.open.set()
    assert s.client.wait_ingested(TENANT, second)["status"]


def test_reads_are_served_while_a_backlog_is_replayed_and_nothing_is_lost(
    serve: Callable[..., Served], redis_client: redis.Redis, memory_store: EdgeVectorStore
) -> None:
    client = MemoryClient(redis_client)
    n = 40
    for i in range(n):
        client.remember(_fact(i))
    # Read by the service's consumer and never acknowledged: what a kill -9 leaves behind.
    redis_client.xgroup_create(redis_keys.INGEST_STREAM, redis_keys.INGEST_GROUP, id="0")
    redis_client.xreadgroup(
        redis_keys.INGEST_GROUP, "memory-service", {redis_keys.INGEST_STREAM: ">"}, count=n
    )

    s = serve(gated=["upsert"], closed=True)
    retry_until(s.store.waiting.is_set, timeout=60, what="the replay inside its first upsert")

    result = _recall(s.client, "which port does service-3 listen on?")

    assert s.store.waiting.is_set(), "the replay was still in progress"
    assert result.palace is not None or result.hits is not None  # an answer, not a timeout
    pending = redis_client.xpending(redis_keys.INGEST_STREAM, redis_keys.INGEST_GROUP)
    assert int(pending["pending"]) == n
    s.store.open.set()
    retry_until(lambda: redis_client.xlen(redis_keys.INGEST_STREAM) == 0, timeout=120,
                what="backlog replayed")  # fmt: skip
    assert memory_store.count(TENANT, Layer.SEMANTIC) == n


def test_overload_answers_busy_retry_within_the_deadline_and_loses_no_request(
    serve: Callable[..., Served],
) -> None:
    s = serve(gated=["search_hybrid"], readers=1)
    s.client.wait_ingested(TENANT, s.client.remember(_fact(1)))
    s.store.open.clear()
    held: list[RecallResult] = []
    first = threading.Thread(target=lambda: held.append(_recall(s.client, "service-1 port?")))
    first.start()
    retry_until(s.store.waiting.is_set, timeout=60, what="the only reader held in a search")

    with pytest.raises(ServiceBusy, match="busy, retry"):
        _recall(s.client, "service-1 port?", timeout=1.0)

    s.store.open.set()
    first.join(timeout=60)
    assert held and held[0].hits, "the request in hand was answered after the overload"


def test_a_request_too_close_to_its_deadline_is_answered_busy_not_started(
    serve: Callable[..., Served],
) -> None:
    s = serve(shed_s=3600.0)  # every request counts as too late to start: overload by setting
    with pytest.raises(ServiceBusy, match="not started, retry"):
        _recall(s.client, "anything", timeout=30.0)


def test_queries_go_between_bulk_micro_batches_and_are_embedded_together(
    embedder: Embedder,
) -> None:
    gate: EmbedGate

    def hold(texts: list[str]) -> None:
        if texts[0].startswith("bulk 0"):  # the first micro-batch waits for three queries
            retry_until(lambda: gate.queued_queries() == 3, timeout=30, what="3 queries queued")

    inner = RecordingEmbedder(embedder, hold)
    gate = EmbedGate(inner, micro_batch=4)
    bulk_texts = [f"bulk {i}" for i in range(12)]
    out: dict[str, Any] = {}
    bulk = threading.Thread(target=lambda: out.update(bulk=gate.bulk.embed(bulk_texts)))
    bulk.start()
    retry_until(lambda: inner.calls, timeout=30, what="the first micro-batch started")
    queries = [
        threading.Thread(target=lambda i=i: out.update({f"q{i}": gate.query.embed([f"q {i}"])}))
        for i in range(3)
    ]
    for t in queries:
        t.start()
    for t in [bulk, *queries]:
        t.join(timeout=60)

    assert inner.calls[0] == bulk_texts[:4]
    assert sorted(inner.calls[1]) == ["q 0", "q 1", "q 2"], "queries: one call, before bulk 4"
    assert inner.calls[2:] == [bulk_texts[4:8], bulk_texts[8:]]
    assert len(out["bulk"]) == 12
    assert out["q1"][0] == pytest.approx(embedder.embed(["q 1"])[0], abs=1e-4)


def test_a_repeated_query_is_answered_from_the_cache_without_the_model(
    embedder: Embedder,
) -> None:
    inner = RecordingEmbedder(embedder, hold=lambda texts: None)
    gate = EmbedGate(inner, query_cache=2)

    first = gate.query.embed(["which port does  billing use?"])
    first[0][0] = 99.0  # a caller changing its vector changes nobody else's
    again = gate.query.embed([" which port does billing use? "])  # same words, other spacing

    assert inner.calls == [["which port does  billing use?"]], "the model ran once"
    assert gate.cache_hits == 1
    assert again[0] == pytest.approx(embedder.embed(["which port does billing use?"])[0], abs=1e-4)
    gate.query.embed(["a"])
    gate.query.embed(["b"])  # the cache holds 2: the billing query, least recently used, left
    gate.query.embed(["which port does billing use?"])
    assert len(inner.calls) == 4


def test_a_recall_answered_by_a_reader_is_logged_after_its_reply(
    serve: Callable[..., Served], redis_client: redis.Redis
) -> None:
    s = serve()
    s.client.wait_ingested(TENANT, s.client.remember(_fact(1)))

    result = _recall(s.client, "which port does service-1 listen on?")

    def logged() -> list[Any]:
        return list(redis_client.xrange(redis_keys.query_log(TENANT)))

    retry_until(logged, timeout=30, what="the query log written by the reader")
    (_id, entry), *_ = logged()
    assert entry["query"] == "which port does service-1 listen on?"
    assert result.hits and json.loads(entry["ids"]) == [h.record.id for h in result.hits]
    assert redis_client.hget(redis_keys.metrics(TENANT), "recalls") == "1"
    held = redis_client.hget(redis_keys.ACTIVE_REFS, f"{TENANT}:{result.hits[0].record.id}")
    assert held and "anonymous" in held


@pytest.mark.parametrize("op", ["recent", "projects", "timeline"])
def test_the_other_read_only_ops_are_answered_while_the_loop_is_inside_an_ingest_batch(
    serve: Callable[..., Served], op: str
) -> None:
    # SessionStart's digest asks `recent` (issue 13): through the loop it waited for the batch
    # in hand and then for a store flush (~190 ms on every session start, hooks_latency.py).
    s = serve(gated=["upsert"])
    first = s.client.remember(_fact(1))
    s.client.wait_ingested(TENANT, first)

    s.store.open.clear()
    second = s.client.remember(_fact(2))
    retry_until(s.store.waiting.is_set, timeout=60, what="the loop inside the batch's upsert")

    try:
        if op == "recent":
            texts = [r.text for r in s.client.recent(TENANT, "p1", 5, timeout=10.0)]
        elif op == "projects":
            texts = list(s.client.projects(TENANT))
        else:
            q = RecallQuery(tenant_id=TENANT, query="which port does service-1 listen on?")
            reply = s.client.call("timeline", q.model_dump(mode="json"), 10.0)
            texts = [v["text"] for timeline in reply["timelines"] for v in timeline]
        assert s.store.waiting.is_set(), "the ingest batch was still in progress"
    finally:
        s.store.open.set()  # a failed ask must not leave the loop at the gate for teardown
    assert (["p1"] if op == "projects" else [_fact(1).text]) == texts[:1]
    assert s.client.wait_ingested(TENANT, second)["status"]


def test_warm_embeds_what_the_cache_lacks_in_one_call(embedder: Embedder) -> None:
    inner = RecordingEmbedder(embedder, hold=lambda texts: None)
    gate = EmbedGate(inner, query_cache=16)
    gate.query.embed(["a"])

    gate.query.warm(["a", "b", "c", "b"])  # type: ignore[attr-defined]
    gate.query.embed(["c"])

    assert inner.calls == [["a"], ["b", "c"]]


def test_the_queries_of_a_readers_batch_cost_one_forward_pass(
    serve: Callable[..., Served], embedder: Embedder
) -> None:
    model = RecordingEmbedder(embedder, hold=lambda texts: None)
    s = serve(gated=["search_hybrid"], closed=True, readers=1, model=model)
    s.client.wait_ingested(TENANT, s.client.remember(_fact(1)))
    first = threading.Thread(target=_recall, args=(s.client, "the first question"))
    first.start()
    assert s.store.waiting.wait(timeout=30), "the reader holds the first recall"
    asked = [f"question number {i}" for i in range(4)]
    rest = [threading.Thread(target=_recall, args=(s.client, q)) for q in asked]
    for t in rest:
        t.start()
    # All four wait in the stream (the fifth entry is the reader's, in hand).
    retry_until(lambda: s.client.redis.xlen(redis_keys.RPC_STREAM) >= 5, timeout=30, what="queued")

    s.store.open.set()
    for t in [first, *rest]:
        t.join(timeout=60)

    assert sorted(asked) in [sorted(call) for call in model.calls]


def test_while_the_loop_ingests_only_the_first_reader_takes_requests(
    serve: Callable[..., Served],
) -> None:
    s = serve(readers=3)
    s.client.wait_ingested(TENANT, s.client.remember(_fact(1)))
    asked = [f"which port, asked {i}" for i in range(12)]
    for q in asked:  # embedded now: a new query would let a second reader serve (decision 581)
        _recall(s.client, q)
    s.service.last_ingest = math.inf  # as while the loop stores an ingest batch
    assert s.service.reads is not None
    reads = s.service.reads
    retry_until(lambda: len(reads.standing_by) == 2, timeout=30, what="readers 1 and 2 aside")
    reads.answered_by.clear()

    threads = [threading.Thread(target=_recall, args=(s.client, q)) for q in asked]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)

    retry_until(lambda: sum(reads.answered_by.values()) == 12, timeout=30, what="counted")
    assert set(s.service.reads.answered_by) == {f"{s.service.consumer}:read0"}


def test_while_the_first_reader_waits_for_the_model_another_serves_during_an_ingest(
    serve: Callable[..., Served], embedder: Embedder
) -> None:
    release = threading.Event()

    def hold(texts: list[str]) -> None:
        if "a slow new question" in texts:
            release.wait(timeout=60)

    s = serve(readers=2, model=RecordingEmbedder(embedder, hold=hold))
    s.client.wait_ingested(TENANT, s.client.remember(_fact(1)))
    _recall(s.client, "a cached question")
    s.service.last_ingest = math.inf  # as while the loop stores an ingest batch
    reads = s.service.reads
    assert reads is not None
    retry_until(lambda: len(reads.standing_by) == 1, timeout=30, what="reader 1 aside")
    slow = threading.Thread(target=_recall, args=(s.client, "a slow new question"))
    slow.start()
    retry_until(lambda: reads._on_model == 1, timeout=30, what="reader 0 at the model")

    cached = _recall(s.client, "a cached question")

    assert slow.is_alive(), "answered while the new question still waits for the model"
    assert cached.query == "a cached question"
    # Counted just after the reply is pushed.
    retry_until(
        lambda: reads.answered_by.get(f"{s.service.consumer}:read1", 0) >= 1,
        timeout=30,
        what="the cached question answered by reader 1",
    )
    release.set()
    slow.join(timeout=60)


def test_while_a_child_process_embeds_the_ingest_every_reader_serves(
    serve: Callable[..., Served],
) -> None:
    children: list[ProcessEmbedder] = []

    def in_a_child(door: Embedder) -> Embedder:
        children.append(ProcessEmbedder(door, start_after_s=0.0))
        return children[-1]

    s = serve(readers=3, bulk=in_a_child)
    s.client.wait_ingested(TENANT, s.client.remember(_fact(1)))  # starts the child
    try:
        assert children[0].wait_ready(120), "the child loaded its model"
        s.client.wait_ingested(TENANT, s.client.remember(_fact(2)))
        assert children[0].served >= 1, "the second ingest was embedded by the child"
        s.service.last_ingest = math.inf  # as while the loop stores an ingest batch

        # The forward passes hold no GIL of the service's: nothing to yield (decision 583).
        assert not s.service.ingesting()
        for i in range(6):
            _recall(s.client, f"which port, asked {i}")
        assert not s.service.reads or not s.service.reads.standing_by

        children[0].close()  # the ingest embeds in the service again: the readers yield
        assert s.service.ingesting()
        assert s.service.reads is not None
        reads = s.service.reads
        retry_until(lambda: len(reads.standing_by) == 2, timeout=30, what="readers 1 and 2 aside")
    finally:
        for child in children:
            child.close()
