"""Recall with the PALACE protocol and the golden rule.

Ranking is hybrid (dense + BM25 prefetches fused by reciprocal rank fusion inside Qdrant).
Relevance, though, is judged on the dense cosine alone: a hit whose cosine with the query is
below :data:`PALACE_MIN_COSINE` is dropped, however well a keyword matched. Zero hits left →
the answer is exactly ``no memory for {X}`` (``aucun souvenir en RAG pour {X}`` for French
tenants), never a guess.

Golden rule: job / task ids named in the query (``JOB-…``, ``TASK-…``, any id of a job or task
in the tenant's hierarchy) or given as filters come back with their status *from the YAML
hierarchy*, beside the memories.

Every recall is logged on the tenant's ``query_log`` stream (the debt audit reads it), and the
ids it returned are registered in ``nika:rag:active_refs`` for the caller's session, so the
purge never removes a memory a live session holds.

Tuning set by the debt audit's actions (hash ``recall_tuning``, see :class:`RecallTuning`):

- ``boost_recency``: fused hits are re-ranked by ``score × (1 + w·exp(-age/τ))`` where ``age``
  is days since the memory's ``valid_from`` (w = ``recency_weight``, τ = ``recency_tau_days``);
  the hit's ``score`` is the boosted one.
- ``tighten_scope``: a query without ``project_id`` is restricted to a project inferred from
  the query log — the last project the caller's session recalled with, else the tenant's most
  recently recalled project; with no project ever named, nothing is restricted. The inferred
  project is logged as ``context_project_id``.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import redis

from nika_tui.domain.hierarchy import Level
from nika_tui.domain.memory import Layer, MemoryRecord, Status
from nika_tui.domain.ports import PointFilter
from nika_tui.domain.recall_params import Candidate, RecallParams, rank_candidates
from nika_tui.domain.requests import RecallHit, RecallQuery, RecallResult
from nika_tui.domain.tenant import Language, TenantConfig
from nika_tui.engine.as_of import current_hits
from nika_tui.engine.context import EngineContext
from nika_tui.services import redis_keys
from nika_tui.services.active_refs import hold_refs
from nika_tui.services.recall_params import params_from_fields, params_key

PALACE_MIN_COSINE = 0.40
"""Dense cosine (all-MiniLM-L6-v2) below which a hit is not relevant.

Chosen on the real embedder (``benchmarks/memory_thresholds.py``, docs/memory.md): over 15
stored facts, 20 questions they answer (median best cosine 0.65) and 20 they do not (median
0.20); at 0.40, 95% of the first keep their hit and 95% of the second get PALACE, the best
balance of the sweep 0.25–0.45.
"""

ACTIVE_REF_TTL_S = 3600
"""How long a recalled id stays referenced by the session that recalled it."""

QUERY_LOG_MAXLEN = 100_000
"""Approximate length kept of each tenant's query log (the audit samples recent queries)."""

RECENCY_WEIGHT = 0.5
"""w set by the boost_recency action: a memory from today scores up to 1.5 × its fused score."""
RECENCY_TAU_DAYS = 30.0
"""τ set by the boost_recency action: the boost falls to 1/e of w after a month."""
SCOPE_LOOKBACK = 200
"""Query-log entries searched for the project tighten_scope infers."""

AS_OF_PREFETCH = 6
"""As of a date, this many times the limit is fetched (retired versions compete for places)."""

ID_PATTERN = re.compile(r"\b(?:JOB|TASK)-[A-Za-z0-9][A-Za-z0-9_.-]*", re.IGNORECASE)
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")


def palace_line(tenant_language: Language, query: str) -> str:
    """The exact PALACE answer for ``query``."""
    if tenant_language is Language.FR:
        return f"aucun souvenir en RAG pour {query}"
    return f"no memory for {query}"


def _filter(q: RecallQuery) -> PointFilter:
    equals: dict[str, str] = {}
    for key in ("project_id", "job_id", "task_id", "domain", "action_type"):
        value = getattr(q, key)
        if value:
            equals[key] = str(value)
    # As of a past date, a memory retired since may have been the current one then.
    if not q.include_retired and q.as_of is None:
        equals["status"] = Status.CURRENT.value
    return PointFilter(equals=equals)


@dataclass(frozen=True, slots=True)
class RecallTuning:
    """A tenant's recall settings (``recall_tuning`` hash; all off by default)."""

    recency_weight: float = 0.0
    recency_tau_days: float = RECENCY_TAU_DAYS
    tighten_scope: bool = False


def _float(raw: object, default: float) -> float:
    try:
        value = float(str(raw))
    except ValueError:
        return default
    return value if math.isfinite(value) else default


def read_tuning(r: redis.Redis, tenant_id: str) -> RecallTuning:
    """The tenant's :class:`RecallTuning` (defaults for missing or unreadable fields)."""
    raw: dict[str, str] = r.hgetall(redis_keys.recall_tuning(tenant_id))  # type: ignore[assignment]
    return tuning_from_fields(raw)


def tuning_from_fields(raw: dict[str, str]) -> RecallTuning:
    """:func:`read_tuning` of the hash's fields (read by the caller, e.g. in a pipeline)."""
    tau = _float(raw.get("recency_tau_days", RECENCY_TAU_DAYS), RECENCY_TAU_DAYS)
    return RecallTuning(
        recency_weight=max(0.0, _float(raw.get("recency_weight", 0.0), 0.0)),
        recency_tau_days=tau if tau > 0 else RECENCY_TAU_DAYS,
        tighten_scope=raw.get("tighten_scope") == "1",
    )


def write_tuning(r: redis.Redis, tenant_id: str, now: datetime, **fields: str) -> RecallTuning:
    """Set some ``recall_tuning`` fields (string values) and return the tuning now in force."""
    mapping: dict[Any, Any] = {**fields, "updated_at": now.isoformat()}
    r.hset(redis_keys.recall_tuning(tenant_id), mapping=mapping)
    return read_tuning(r, tenant_id)


def recency_factor(tuning: RecallTuning, valid_from: datetime, now: datetime) -> float:
    """``1 + w·exp(-age/τ)`` for a memory valid from ``valid_from`` (age in days, ≥ 0)."""
    age = max(0.0, (now - valid_from).total_seconds() / 86400.0)
    return 1.0 + tuning.recency_weight * math.exp(-age / tuning.recency_tau_days)


def inferred_project(r: redis.Redis, tenant_id: str, session_id: str) -> str:
    """The project tighten_scope restricts an unscoped query to ("" when none is known).

    The last project the caller's session recalled with, else the tenant's most recently
    recalled project, over the last :data:`SCOPE_LOOKBACK` logged recalls.
    """
    entries: list[tuple[str, dict[str, str]]] = r.xrevrange(  # type: ignore[assignment]
        redis_keys.query_log(tenant_id), count=SCOPE_LOOKBACK
    )
    latest = ""
    for _id, fields in entries:
        project = fields.get("project_id") or fields.get("context_project_id") or ""
        if not project:
            continue
        if session_id and fields.get("session_id") == session_id:
            return project
        latest = latest or project
    return latest


def _cosine(a: Sequence[float], b: Sequence[float] | None) -> float:
    if b is None:
        return 0.0
    # map(mul) rather than a generator: the same products summed in the same order, ~4x less
    # interpreter time (ten hits of 384 dims were 0.7 ms of a recall's ~2 ms, under the GIL).
    return float(sum(map(operator.mul, a, b)))


def named_ids(ctx: EngineContext, q: RecallQuery) -> list[str]:
    """Job / task ids the query names or filters by, in order of appearance."""
    found: list[str] = [i for i in (q.job_id, q.task_id) if i]
    found += [m.group(0).rstrip(".-") for m in ID_PATTERN.finditer(q.query)]
    known = {
        n.id
        for n in ctx.hierarchy_nodes(q.tenant_id)
        if n.level in (Level.JOB, Level.TASK, Level.ATOMIC)
    }
    if known:
        found += [t for t in _TOKEN.findall(q.query) if t in known]
    by_upper = {k.upper(): k for k in known}
    out: list[str] = []
    for item in found:
        canonical = by_upper.get(item.upper(), item)
        if canonical not in out:
            out.append(canonical)
    return out


def hierarchy_status(ctx: EngineContext, tenant_id: str, ids: Sequence[str]) -> dict[str, Any]:
    """``{id: {level, status, title, …}}`` from the YAML hierarchy (``status: None`` if absent)."""
    nodes = {n.id: n for n in ctx.hierarchy_nodes(tenant_id)}
    out: dict[str, Any] = {}
    for node_id in ids:
        node = nodes.get(node_id)
        if node is None:
            out[node_id] = {"status": None, "note": "not in the hierarchy"}
        else:
            out[node_id] = {
                "level": node.level.value,
                "status": node.status.value,
                "title": node.title,
                "parent_id": node.parent_id,
                "assignee": node.assignee,
                "deadline": node.deadline.isoformat() if node.deadline else None,
                "updated_at": node.updated_at.isoformat(),
            }
    return out


def register_refs(
    r: redis.Redis, tenant_id: str, session_id: str, ids: Sequence[str], now_s: float
) -> None:
    """Record that ``session_id`` holds ``ids`` until now + TTL (expired holders are pruned)."""
    hold_refs(r, [f"{tenant_id}:{i}" for i in ids], session_id, now_s, ACTIVE_REF_TTL_S)


def active_sessions(r: redis.Redis, tenant_id: str, memory_id: str, now_s: float) -> list[str]:
    """Sessions that still hold ``memory_id`` (the purge must not remove it then)."""
    raw = r.hget(redis_keys.ACTIVE_REFS, f"{tenant_id}:{memory_id}")
    holders: dict[str, float] = json.loads(str(raw)) if raw else {}
    return sorted(s for s, exp in holders.items() if exp > now_s)


def recall(
    ctx: EngineContext, q: RecallQuery, vector: Sequence[float] | None = None
) -> RecallResult:
    """Answer one recall (see the module docstring for the rules).

    A tenant with adopted parameters (``nika tune recall``, docs/tuning.md) is ranked by
    :func:`~nika_tui.domain.recall_params.rank_candidates` with them instead.

    Args:
        ctx: engine context.
        q: the query.
        vector: the query's embedding when the caller embedded a batch of queries.
    """
    config = ctx.tenant(q.tenant_id)  # an unknown tenant fails here, before any embedding
    if vector is None:
        vector = ctx.embedder.embed([q.query])[0]
    # Both settings hashes in one round trip (each costs a wake-up of Redis and of this thread).
    pipe = ctx.redis.pipeline(transaction=False)
    pipe.hgetall(redis_keys.recall_tuning(q.tenant_id))
    pipe.hgetall(params_key(q.tenant_id))
    raw_tuning, raw_params = pipe.execute()
    tuning = tuning_from_fields(raw_tuning)
    context_project = ""
    if tuning.tighten_scope and not q.project_id:
        context_project = inferred_project(ctx.redis, q.tenant_id, q.session_id)
        if context_project:
            q = q.model_copy(update={"project_id": context_project})
    flt = _filter(q)
    layers = [q.layer] if q.layer is not None else list(Layer)
    params, adopted = params_from_fields(raw_params)
    # The tuner's measured set wins over the debt action's recency heuristic. It was measured
    # on recalls of what is current now: a recall as of a past date keeps the default ranking.
    if adopted and q.as_of is None:
        return _recall_tuned(ctx, q, vector, flt, layers, params, context_project, config)
    hits: list[RecallHit] = []
    # Twice the limit: hits below the relevance floor are dropped after fusion (and, as of a
    # date, the versions that were not current then).
    fetch = q.limit * (2 if q.as_of is None else AS_OF_PREFETCH)
    for layer in layers:
        for p in ctx.vectors.search_hybrid(
            q.tenant_id, layer, vector, q.query, flt=flt, limit=fetch, with_vectors=True
        ):
            cosine = _cosine(vector, p.vector)
            if cosine < PALACE_MIN_COSINE:
                continue
            record = MemoryRecord.from_payload(dict(p.payload))
            hits.append(RecallHit(record=record, score=p.score, cosine=round(cosine, 4)))
    if tuning.recency_weight > 0:
        now = ctx.clock()
        hits = [
            h.model_copy(
                update={"score": h.score * recency_factor(tuning, h.record.valid_from, now)}
            )
            for h in hits
        ]
    if q.as_of is not None and not q.include_retired:
        hits = current_hits(ctx, q.tenant_id, hits, q.as_of)
    hits.sort(key=lambda h: (-h.score, -h.cosine))
    return _answer(ctx, q, hits[: q.limit], context_project, config)


def _recall_tuned(
    ctx: EngineContext,
    q: RecallQuery,
    vector: Sequence[float],
    flt: PointFilter,
    layers: Sequence[Layer],
    params: RecallParams,
    context_project: str,
    config: TenantConfig,
) -> RecallResult:
    """Recall with the tenant's adopted parameters (ranked by :func:`rank_candidates`)."""
    cands: list[Candidate] = []
    records: dict[str, MemoryRecord] = {}
    for layer in layers:
        for p in ctx.vectors.search_hybrid(
            q.tenant_id,
            layer,
            vector,
            q.query,
            flt=flt,
            limit=q.limit * params.depth_factor,
            with_vectors=True,
            hnsw_ef=params.hnsw_ef or None,
        ):
            record = MemoryRecord.from_payload(dict(p.payload))
            records[record.id] = record
            cands.append(
                Candidate(
                    record.id, p.score, _cosine(vector, p.vector), record.valid_from.timestamp()
                )
            )
    cands.sort(key=lambda c: -c.fused)
    ranked = rank_candidates(cands, params, q.limit, ctx.clock().timestamp())
    hits = [
        RecallHit(record=records[c.id], score=score, cosine=round(c.cosine, 4))
        for c, score in ranked
    ]
    return _answer(ctx, q, hits, context_project, config)


def _answer(
    ctx: EngineContext,
    q: RecallQuery,
    hits: list[RecallHit],
    context_project: str,
    config: TenantConfig,
) -> RecallResult:
    ids = named_ids(ctx, q)
    result = RecallResult(
        query=q.query,
        tenant_id=q.tenant_id,
        hits=hits,
        palace=None if hits else palace_line(config.language, q.query),
        hierarchy=hierarchy_status(ctx, q.tenant_id, ids) if ids else {},
    )
    ctx.after_reply(lambda pipe: _log(pipe, ctx, q, result, context_project))
    return result


def _log(
    pipe: Any,
    ctx: EngineContext,
    q: RecallQuery,
    result: RecallResult,
    context_project: str = "",
) -> None:
    """Queue the recall's query log, counters and refs on ``pipe`` (a Redis pipeline)."""
    now = ctx.clock()
    ids = [h.record.id for h in result.hits]
    filters = {
        k: v
        for k, v in q.model_dump(mode="json").items()
        if k in ("job_id", "task_id", "domain", "action_type", "layer", "include_retired", "as_of")
        and v not in (None, False)
    }
    pipe.xadd(
        redis_keys.query_log(q.tenant_id),
        {
            "at": now.isoformat(),
            "query": q.query,
            "session_id": q.session_id,
            "project_id": "" if context_project else (q.project_id or ""),
            "context_project_id": context_project,
            "filters": json.dumps(filters),
            "ids": json.dumps(ids),
            "cosines": json.dumps([h.cosine for h in result.hits]),
            "scores": json.dumps([round(h.score, 6) for h in result.hits]),
            "palace": "1" if result.palace else "0",
        },
        maxlen=QUERY_LOG_MAXLEN,
        approximate=True,
    )
    metrics = redis_keys.metrics(q.tenant_id)
    pipe.hincrby(metrics, "recalls", 1)
    if result.palace:
        pipe.hincrby(metrics, "palace_misses", 1)
    fields = [f"{q.tenant_id}:{i}" for i in ids]
    # The refs' read-modify-write is a script in Redis: no round trip of its own (decision 579).
    hold_refs(pipe, fields, q.session_id or "anonymous", now.timestamp(), ACTIVE_REF_TTL_S)
