"""Debt / purge / REM fixtures: an engine context on real stores with constructed vectors.

- ``debt_ctx``: :class:`EngineContext` on the emptied embedded Redis and a Qdrant Edge store in
  the tmp dir, a settable clock (``debt_ctx.clock.now``), tenant ``acme`` configured, and an
  embedder that refuses to embed: the audit, purge and REM passes work on stored vectors only,
  and this proves it. Tests whose meaning depends on semantics use ``engine_ctx`` (real model).
- helpers to build unit vectors with an exact cosine to another, and to store records.
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
import redis

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.memory import Layer, MemoryRecord, Status, content_hash
from nika_tui.domain.ports import VectorPoint

if TYPE_CHECKING:
    from nika_tui.engine.context import EngineContext
    from nika_tui.services.vectors.edge import EdgeVectorStore

DIM = 384
T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


class NoEmbedder:
    """Fails loudly if called: the code under test must use stored vectors only."""

    dimension = DIM
    name = "none"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise AssertionError("this code path must not embed")


class FixedClock:
    """A settable clock."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def unit(rng: random.Random, dim: int = DIM) -> list[float]:
    """A random unit vector."""
    v = [rng.gauss(0.0, 1.0) for _ in range(dim)]
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def at_cosine(v: Sequence[float], cos: float, rng: random.Random) -> list[float]:
    """A unit vector whose cosine with unit ``v`` is exactly ``cos``."""
    u = unit(rng, len(v))
    dot = sum(a * b for a, b in zip(u, v, strict=True))
    orth = [a - dot * b for a, b in zip(u, v, strict=True)]
    n = math.sqrt(sum(x * x for x in orth))
    orth = [x / n for x in orth]
    s = math.sqrt(1.0 - cos * cos)
    return [cos * a + s * b for a, b in zip(v, orth, strict=True)]


def make_record(
    tenant_id: str,
    text: str,
    *,
    layer: Layer = Layer.SEMANTIC,
    valid_from: datetime = T0,
    asserted_at: datetime | None = None,
    status: Status = Status.CURRENT,
    project_id: str = "p1",
    job_id: str = "",
    task_id: str = "",
    session_id: str = "",
    entity_ids: tuple[str, ...] = (),
    files: tuple[str, ...] = (),
    superseded_by: str | None = None,
    retired_at: datetime | None = None,
    retire_reason: str | None = None,
    record_id: str | None = None,
) -> MemoryRecord:
    """A memory record with sensible defaults."""
    return MemoryRecord(
        id=record_id or str(uuid.uuid4()),
        tenant_id=tenant_id,
        layer=layer,
        text=text,
        meta=NikaMeta(
            timestamp=valid_from,
            project_id=project_id,
            job_id=job_id,
            task_id=task_id,
            session_id=session_id,
            entity_ids=entity_ids,
            files=files,
        ),
        status=status,
        valid_from=valid_from,
        asserted_at=asserted_at or valid_from,
        retired_at=retired_at,
        superseded_by=superseded_by,
        retire_reason=retire_reason,
        content_hash=content_hash(tenant_id, layer, text, project_id),
    )


def put(ctx: EngineContext, records: Sequence[tuple[MemoryRecord, Sequence[float]]]) -> None:
    """Store records with their vectors (bypassing ingest: no supersede on the way in)."""
    by_layer: dict[Layer, list[VectorPoint]] = {}
    for rec, vec in records:
        by_layer.setdefault(rec.layer, []).append(
            VectorPoint(rec.id, list(vec), rec.text, rec.to_payload())
        )
    for layer, points in by_layer.items():
        for start in range(0, len(points), 1000):
            ctx.vectors.upsert(rec_tenant(records), layer, points[start : start + 1000])


def rec_tenant(records: Sequence[tuple[MemoryRecord, Any]]) -> str:
    """The single tenant of a batch of records."""
    tenants = {r.tenant_id for r, _ in records}
    assert len(tenants) == 1, tenants
    return tenants.pop()


@pytest.fixture
def debt_ctx(
    redis_client: redis.Redis, edge_store: EdgeVectorStore, make_tenant: Any
) -> EngineContext:
    """Engine context on real Redis + Qdrant Edge, fixed clock at ``T0 + 1 day``."""
    from nika_tui.engine.context import EngineContext
    from nika_tui.settings import Settings

    make_tenant("acme")
    return EngineContext(
        settings=Settings.from_env(),
        redis=redis_client,
        vectors=edge_store,
        embedder=NoEmbedder(),
        clock=FixedClock(T0 + timedelta(days=1)),
    )
