"""Ingest one remembered fact: validate, embed, store idempotently, supersede.

Idempotency: every request has a key (the writer's ``idempotency_key``, or the content hash of
tenant + layer + project + normalised text). The point id is ``uuid5(tenant, key)``
(:func:`nika_tui.domain.memory.memory_id`), so replaying a request after a crash overwrites the
same point and never adds a second one. A *different* key carrying text already stored as a
current memory (same content hash) is recognised as a duplicate and stores nothing new.

Order, chosen so that a crash at any step is repaired by a replay: upsert the new point
(durable when it returns) → supersede against the current memories (retirements applied at
once) → the batch's UNCERTAIN pairs queued for review → bus + metrics. The caller (the service)
acknowledges the stream entry only after this function returned and the store was flushed; a
replay judges again the pairs that were not queued (both memories are still current).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from nika_tui.domain.envelope import explain_validation_error
from nika_tui.domain.memory import Layer, MemoryRecord, Status, content_hash, memory_id
from nika_tui.domain.ports import PointFilter, VectorPoint
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.sensitivity import keep_private
from nika_tui.engine.context import EngineContext
from nika_tui.engine.review import ReviewItem, enqueue_many
from nika_tui.engine.review_refs import close_reviews_of
from nika_tui.engine.supersede import supersede
from nika_tui.errors import NikaError, StoreUnavailable, ValidationFailed
from nika_tui.services import redis_keys
from nika_tui.services.memory_client import idempotency_key


@dataclass
class IngestOutcome:
    """What happened to one request (also the JSON a waiting writer receives)."""

    id: str
    tenant_id: str
    idempotency_key: str
    layer: str
    status: str = "ingested"
    """``ingested`` (new or re-asserted), ``replayed`` (same point rewritten) or ``duplicate``."""
    duplicate_of: str | None = None
    retired: list[str] = field(default_factory=list)
    reviews: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    judgements: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (shallow: ``asdict``'s deep copy was ~5% of a judged ingest)."""
        out = dict(self.__dict__)
        for key in ("retired", "reviews", "kept"):
            out[key] = list(out[key])
        out["judgements"] = [dict(j) for j in self.judgements]
        return out


def parse_request(raw: str) -> RememberRequest:
    """A stream entry's JSON as a request, or :class:`ValidationFailed` naming the bad fields."""
    try:
        return RememberRequest.model_validate_json(raw)
    except ValidationError as exc:
        raise ValidationFailed(
            f"invalid remember request: {explain_validation_error(exc)}",
            "fix the writer; the entry was moved to the dead-letter stream",
        ) from exc


@dataclass
class _Prepared:
    req: RememberRequest
    record: MemoryRecord
    payload: dict[str, Any]
    vector: list[float]
    outcome: IngestOutcome
    replay: bool


def _prepare(
    ctx: EngineContext,
    req: RememberRequest,
    vector: Sequence[float],
    now: datetime,
    existing: Mapping[str, MemoryRecord],
) -> _Prepared | IngestOutcome:
    """Validate one request and build its record; a duplicate comes back as its outcome.

    ``existing``: the stored records of the batch's point ids (one retrieve per tenant and
    layer for the whole batch, by :func:`_stored`).
    """
    if not req.text.strip():
        raise ValidationFailed("text is empty", "remember a non-empty fact")
    key = idempotency_key(req)
    point_id = memory_id(req.tenant_id, key)
    chash = content_hash(req.tenant_id, req.layer, req.text, req.meta.project_id)
    outcome = IngestOutcome(point_id, req.tenant_id, key, req.layer.value)
    if req.idempotency_key and req.idempotency_key != chash:
        # The writer's own key: the same text under another key is still the same fact.
        same_text = [
            p
            for p in ctx.vectors.scroll(
                req.tenant_id,
                req.layer,
                PointFilter(equals={"content_hash": chash, "status": Status.CURRENT.value}),
                batch=4,
            )
            if p.id != point_id
        ]
        if same_text:
            outcome.status = "duplicate"
            outcome.duplicate_of = outcome.id = same_text[0].id
            return outcome
    previous = existing.get(point_id)
    replay = previous is not None and previous.status is Status.CURRENT
    record = MemoryRecord(
        id=point_id,
        tenant_id=req.tenant_id,
        layer=req.layer,
        text=req.text,
        meta=keep_private(req.meta, previous.meta if previous else None),
        status=Status.CURRENT,
        valid_from=req.valid_from or req.meta.timestamp,
        # A replay keeps when we first learnt the fact; a retired fact said again is re-asserted.
        asserted_at=previous.asserted_at if replay and previous else now,
        content_hash=chash,
    )
    payload = record.to_payload()
    payload["idempotency_key"] = key
    return _Prepared(req, record, payload, list(vector), outcome, replay)


def _stored(ctx: EngineContext, reqs: Sequence[RememberRequest]) -> dict[str, MemoryRecord]:
    """The records already stored under the requests' point ids: one retrieve per group.

    A retrieve per memory was a tenth of the store's CPU per memory on a full shard.
    """
    wanted: dict[tuple[str, Layer], list[str]] = {}
    for req in reqs:
        wanted.setdefault((req.tenant_id, req.layer), []).append(
            memory_id(req.tenant_id, idempotency_key(req))
        )
    return {
        point.id: MemoryRecord.from_payload(dict(point.payload))
        for (tenant_id, layer), ids in wanted.items()
        for point in ctx.vectors.retrieve(tenant_id, layer, ids)
    }


def _known_tenants(
    ctx: EngineContext, reqs: Sequence[RememberRequest]
) -> dict[str, NikaError | None]:
    """Each tenant of the batch checked once: ``None`` if it has a config, else its error."""
    known: dict[str, NikaError | None] = {}
    for tenant_id in {req.tenant_id for req in reqs}:
        try:
            ctx.tenant(tenant_id)
            known[tenant_id] = None
        except StoreUnavailable:
            raise
        except NikaError as exc:
            known[tenant_id] = exc
    return known


def ingest_batch(
    ctx: EngineContext,
    reqs: Sequence[RememberRequest],
    vectors: Sequence[Sequence[float]] | None = None,
) -> list[IngestOutcome | NikaError]:
    """Store a batch of memories (one upsert per tenant and layer), then supersede each.

    Supersede runs in request order, and a memory's candidates never include memories that come
    *later* in the same batch: the result is the same as ingesting one by one.

    Args:
        ctx: engine context.
        reqs: the requests (texts already length-checked by their model).
        vectors: their embeddings when the caller has them; computed here otherwise.

    Returns:
        One outcome per request, in order; a request refused for a reason a retry cannot fix
        (unknown tenant, blank text) gets its :class:`NikaError` instead.

    Raises:
        StoreUnavailable: the vector store or Redis failed (nothing may be acknowledged).
    """
    if vectors is None:
        vectors = ctx.embedder.embed([r.text for r in reqs]) if reqs else []
    now = ctx.clock()
    known = _known_tenants(ctx, reqs)
    existing = _stored(ctx, [req for req in reqs if known[req.tenant_id] is None])
    results: list[IngestOutcome | NikaError | _Prepared] = []
    by_id: dict[str, _Prepared] = {}
    by_hash: dict[tuple[str, str], _Prepared] = {}
    for req, vector in zip(reqs, vectors, strict=True):
        refused = known[req.tenant_id]
        if refused is not None:
            results.append(refused)
            continue
        try:
            prepared = _prepare(ctx, req, vector, now, existing)
        except StoreUnavailable:
            raise
        except NikaError as exc:
            results.append(exc)
            continue
        if isinstance(prepared, _Prepared):
            # Twice in one batch (a writer's retry, or one text under two keys): keep the first.
            first = by_id.get(prepared.record.id) or by_hash.get(
                (req.tenant_id, prepared.record.content_hash)
            )
            if first is not None:
                dup = prepared.outcome
                dup.status, dup.id, dup.duplicate_of = "duplicate", first.record.id, first.record.id
                results.append(dup)
                continue
            by_id[prepared.record.id] = prepared
            by_hash[(req.tenant_id, prepared.record.content_hash)] = prepared
        results.append(prepared)
    todo = [p for p in results if isinstance(p, _Prepared)]
    groups: dict[tuple[str, Layer], list[VectorPoint]] = {}
    for p in todo:
        groups.setdefault((p.req.tenant_id, p.req.layer), []).append(
            VectorPoint(p.record.id, p.vector, p.req.text, p.payload)
        )
    for (tenant_id, layer), points in groups.items():
        ctx.vectors.upsert(tenant_id, layer, points)
    # Later memories of the batch in the same tenant, layer and project: the only ones a
    # supersede search could return (it filters by project), so the only ones to skip. Every
    # later id of the batch widened each search by up to 127 hits, each payload converted.
    later: dict[tuple[str, Layer, str], set[str]] = {}
    for p in todo:
        later.setdefault(_scope(p), set()).add(p.record.id)
    logged = [p for p in todo if not p.replay]
    reviews: list[ReviewItem] = []
    for p in todo:
        scope = later[_scope(p)]
        scope.discard(p.record.id)
        _finish(ctx, p, exclude=scope, reviews=reviews)
    enqueue_many(ctx, reviews)  # before the caller's flush and acks: a crash re-judges them
    if reviews:
        # A pair queued above may name a memory a later fact of this batch retired.
        for p in todo:
            for old_id in p.outcome.retired:
                close_reviews_of(ctx, p.req.tenant_id, old_id)
    _log_ingested(ctx, logged, now)
    return [p.outcome if isinstance(p, _Prepared) else p for p in results]


def _scope(p: _Prepared) -> tuple[str, Layer, str]:
    """Where a memory's supersede candidates live: its tenant, layer and project."""
    return p.req.tenant_id, p.req.layer, p.req.meta.project_id


def _finish(ctx: EngineContext, p: _Prepared, exclude: set[str], reviews: list[ReviewItem]) -> None:
    result = supersede(ctx, p.record, p.vector, exclude=exclude, reviews=reviews)
    out = p.outcome
    out.retired, out.reviews, out.kept = result.retired, result.reviews, result.kept
    out.judgements = result.judgements
    if p.replay:
        out.status = "replayed"


def _log_ingested(ctx: EngineContext, done: Sequence[_Prepared], now: datetime) -> None:
    """The bus line, metric and entity-feed event of each new memory, batched.

    One bus append (one lock, one fsync per tenant) and one Redis round trip for the whole
    batch: per memory, they were about half of the store's CPU in the service, measured.
    """
    if not done:
        return
    by_tenant: dict[str, list[_Prepared]] = {}
    for p in done:
        by_tenant.setdefault(p.req.tenant_id, []).append(p)
    for tenant_id, prepared in by_tenant.items():
        ctx.bus(tenant_id).append_many(
            [
                (
                    "memory.ingested",
                    {
                        "memory_id": p.record.id,
                        "layer": p.req.layer.value,
                        "content_hash": p.record.content_hash,
                        "retired": p.outcome.retired,
                        "reviews": p.outcome.reviews,
                    },
                    p.req.meta,
                    now,
                )
                for p in prepared
            ]
        )
    pipe = ctx.redis.pipeline(transaction=False)
    for tenant_id, prepared in by_tenant.items():
        pipe.hincrby(redis_keys.metrics(tenant_id), "ingested", len(prepared))
    for p in done:
        pipe.xadd(
            redis_keys.ENTITY_FEED,
            {"event": "ingested", "tenant_id": p.req.tenant_id, "id": p.record.id},
            maxlen=10_000,
            approximate=True,
        )
    pipe.execute()


def ingest(
    ctx: EngineContext, req: RememberRequest, vector: Sequence[float] | None = None
) -> IngestOutcome:
    """Store one memory and supersede what it replaces (see :func:`ingest_batch`).

    Raises:
        TenantNotFound: the tenant has no config.
        ValidationFailed: blank text or another invalid field.
        StoreUnavailable: the vector store or Redis failed (the entry must not be acked).
    """
    [result] = ingest_batch(ctx, [req], None if vector is None else [vector])
    if isinstance(result, NikaError):
        raise result
    return result
