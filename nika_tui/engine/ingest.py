"""Ingest one remembered fact: validate, embed, store idempotently, supersede.

Idempotency: every request has a key (the writer's ``idempotency_key``, or the content hash of
tenant + layer + project + normalised text). The point id is ``uuid5(tenant, key)``
(:func:`nika_tui.domain.memory.memory_id`), so replaying a request after a crash overwrites the
same point and never adds a second one. A *different* key carrying text already stored as a
current memory (same content hash) is recognised as a duplicate and stores nothing new.

Order, chosen so that a crash at any step is repaired by a replay: upsert the new point
(durable when it returns) → supersede against the current memories → bus + metrics. The caller
(the service) acknowledges the stream entry only after this function returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import ValidationError

from nika_tui.domain.envelope import explain_validation_error
from nika_tui.domain.memory import MemoryRecord, Status, content_hash, memory_id
from nika_tui.domain.ports import PointFilter, VectorPoint
from nika_tui.domain.requests import RememberRequest
from nika_tui.engine.context import EngineContext
from nika_tui.engine.supersede import supersede
from nika_tui.errors import ValidationFailed
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
        """JSON-ready dict."""
        return asdict(self)


def parse_request(raw: str) -> RememberRequest:
    """A stream entry's JSON as a request, or :class:`ValidationFailed` naming the bad fields."""
    try:
        return RememberRequest.model_validate_json(raw)
    except ValidationError as exc:
        raise ValidationFailed(
            f"invalid remember request: {explain_validation_error(exc)}",
            "fix the writer; the entry was moved to the dead-letter stream",
        ) from exc


def ingest(
    ctx: EngineContext, req: RememberRequest, vector: Sequence[float] | None = None
) -> IngestOutcome:
    """Store one memory and supersede what it replaces.

    Args:
        ctx: engine context.
        req: the request (text already length-checked by its model).
        vector: its embedding when the caller embedded a batch; computed here otherwise.

    Returns:
        The outcome: the point id, and what was retired / queued for review.

    Raises:
        TenantNotFound: the tenant has no config.
        ValidationFailed: blank text or another invalid field.
        StoreUnavailable: the vector store or Redis failed (the entry must not be acked).
    """
    ctx.tenant(req.tenant_id)
    if not req.text.strip():
        raise ValidationFailed("text is empty", "remember a non-empty fact")
    key = idempotency_key(req)
    point_id = memory_id(req.tenant_id, key)
    chash = content_hash(req.tenant_id, req.layer, req.text, req.meta.project_id)
    outcome = IngestOutcome(point_id, req.tenant_id, key, req.layer.value)

    if req.idempotency_key and req.idempotency_key != chash:
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
            outcome.duplicate_of = same_text[0].id
            outcome.id = same_text[0].id
            return outcome

    if vector is None:
        vector = ctx.embedder.embed([req.text])[0]
    now = ctx.clock()
    existing = ctx.vectors.retrieve(req.tenant_id, req.layer, [point_id])
    previous = MemoryRecord.from_payload(dict(existing[0].payload)) if existing else None
    replay = previous is not None and previous.status is Status.CURRENT
    record = MemoryRecord(
        id=point_id,
        tenant_id=req.tenant_id,
        layer=req.layer,
        text=req.text,
        meta=req.meta,
        status=Status.CURRENT,
        valid_from=req.valid_from or req.meta.timestamp,
        # A replay keeps when we first learnt the fact; a retired fact said again is re-asserted.
        asserted_at=previous.asserted_at if replay and previous else now,
        content_hash=chash,
    )
    payload = record.to_payload()
    payload["idempotency_key"] = key
    ctx.vectors.upsert(
        req.tenant_id, req.layer, [VectorPoint(point_id, list(vector), req.text, payload)]
    )
    result = supersede(ctx, record, vector)
    outcome.retired, outcome.reviews, outcome.kept = result.retired, result.reviews, result.kept
    outcome.judgements = result.judgements
    if replay:
        outcome.status = "replayed"
        return outcome
    ctx.bus(req.tenant_id).append(
        "memory.ingested",
        {
            "memory_id": point_id,
            "layer": req.layer.value,
            "content_hash": chash,
            "retired": result.retired,
            "reviews": result.reviews,
        },
        meta=req.meta,
        now=now,
    )
    ctx.redis.hincrby(redis_keys.metrics(req.tenant_id), "ingested", 1)
    ctx.redis.xadd(
        redis_keys.ENTITY_FEED,
        {"event": "ingested", "tenant_id": req.tenant_id, "id": point_id},
        maxlen=10_000,
        approximate=True,
    )
    return outcome
