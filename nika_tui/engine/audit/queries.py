"""Query-log metrics of the audit: recent recalls read back and scored against the store."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nika_tui.domain import debt_tables
from nika_tui.domain.debt import MetricReport, build_metric
from nika_tui.domain.memory import Layer
from nika_tui.domain.ports import VectorStore
from nika_tui.domain.sampling import (
    estimate_proportion,
    mean_interval,
)
from nika_tui.engine.audit.inventory import parse_ts
from nika_tui.engine.context import EngineContext
from nika_tui.services import redis_keys


@dataclass(frozen=True)
class LoggedQuery:
    """One recall read back from the query log."""

    at: str
    query: str
    project_id: str
    job_id: str
    task_id: str
    action_type: str
    context_project_id: str
    ids: list[str]
    cosines: list[float]


def _json_list(raw: str | None) -> list[Any]:
    try:
        value = json.loads(raw or "[]")
    except json.JSONDecodeError:
        return []
    return value if isinstance(value, list) else []


def recent_queries(ctx: EngineContext, tenant_id: str, n: int) -> list[LoggedQuery]:
    """The ``n`` most recent recalls of the tenant's query log (newest first)."""
    out: list[LoggedQuery] = []
    entries: list[tuple[str, dict[str, str]]] = ctx.redis.xrevrange(  # type: ignore[assignment]
        redis_keys.query_log(tenant_id), count=n
    )
    for _id, fields in entries:
        try:
            filters = json.loads(fields.get("filters") or "{}")
        except json.JSONDecodeError:
            filters = {}
        if not isinstance(filters, dict):
            filters = {}
        out.append(
            LoggedQuery(
                at=fields.get("at", ""),
                query=fields.get("query", ""),
                project_id=fields.get("project_id", "") or str(filters.get("project_id") or ""),
                job_id=str(filters.get("job_id") or fields.get("job_id") or ""),
                task_id=str(filters.get("task_id") or fields.get("task_id") or ""),
                action_type=str(filters.get("action_type") or fields.get("action_type") or ""),
                context_project_id=fields.get("context_project_id", ""),
                ids=[str(i) for i in _json_list(fields.get("ids"))],
                cosines=[float(c) for c in _json_list(fields.get("cosines"))],
            )
        )
    return out


def _payloads(
    vectors: VectorStore, tenant_id: str, ids: Sequence[str]
) -> dict[str, Mapping[str, Any]]:
    found: dict[str, Mapping[str, Any]] = {}
    wanted = list(dict.fromkeys(ids))
    for layer in Layer:
        missing = [i for i in wanted if i not in found]
        if not missing:
            break
        for p in vectors.retrieve(tenant_id, layer, missing):
            found[p.id] = p.payload
    return found


def query_metrics(
    ctx: EngineContext, tenant_id: str, now: datetime
) -> tuple[MetricReport, MetricReport, MetricReport]:
    """rag_offtopic_rate, cross_project_leakage and staleness_score from the query log."""
    queries = recent_queries(ctx, tenant_id, debt_tables.QUERY_WINDOW)
    payloads = _payloads(ctx.vectors, tenant_id, [i for q in queries for i in q.ids])
    off, served = 0, 0
    leaked, scoped = 0, 0
    ages_all: list[float] = []
    ages_ops: list[float] = []
    # Queries behind each value: below debt_tables.MIN_QUERY_SAMPLE a metric cannot warn or alert.
    n_scoped, n_ops = 0, 0
    for q in queries:
        project = q.project_id or q.context_project_id
        operational = q.action_type in debt_tables.OPERATIONAL_ACTIONS or bool(
            q.job_id or q.task_id
        )
        n_scoped += bool(project)
        n_ops += operational
        for rank, mid in enumerate(q.ids):
            payload = payloads.get(mid)
            if payload is None:
                continue  # purged since: neither on nor off topic
            cosine = q.cosines[rank] if rank < len(q.cosines) else 1.0
            served += 1
            outside = any(
                want and str(payload.get(key) or "") != want
                for key, want in (
                    ("project_id", q.project_id),
                    ("job_id", q.job_id),
                    ("task_id", q.task_id),
                )
            )
            if outside or cosine < debt_tables.OFFTOPIC_COSINE_FLOOR:
                off += 1
            if project:
                scoped += 1
                chunk_project = str(payload.get("project_id") or "")
                if chunk_project and chunk_project != project:
                    leaked += 1
            if rank < 5:
                valid = parse_ts(payload.get("valid_from"))
                if valid is not None:
                    age = max(0.0, (now.timestamp() - valid) / 86400.0)
                    ages_all.append(age)
                    if operational:
                        ages_ops.append(age)
    n_q = len(queries)
    offtopic = estimate_proportion(off, served)
    leakage = estimate_proportion(leaked, scoped)
    ages = ages_ops or ages_all
    stale = mean_interval(ages)
    tagged = "operational" if ages_ops else "all (none tagged operational)"
    return (
        build_metric(
            "rag_offtopic_rate",
            offtopic.value if served else None,
            sample_size=served,
            ci=(offtopic.low, offtopic.high) if served else None,
            detail=f"{off} of {served} chunks off topic over {n_q} queries",
            queries=n_q,
        ),
        build_metric(
            "cross_project_leakage",
            leakage.value if scoped else None,
            sample_size=scoped,
            ci=(leakage.low, leakage.high) if scoped else None,
            detail=f"{leaked} of {scoped} chunks from another project ({n_scoped} queries)",
            queries=n_scoped,
        ),
        build_metric(
            "staleness_score",
            stale.value if ages else None,
            sample_size=stale.sample_size,
            ci=(stale.low, stale.high) if len(ages) > 1 else None,
            detail=f"mean age of {len(ages)} top-5 chunks, queries: {tagged}",
            queries=n_ops if ages_ops else n_q,
        ),
    )
