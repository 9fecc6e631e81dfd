"""``nika memory timeline QUERY``: how a fact changed, version after version.

The query finds memories of the tenant, retired ones included, above the PALACE relevance
floor; each hit's supersede chain (:func:`nika_tui.engine.history.history`) becomes one
timeline: every version with when it became true, until when, what replaced it and why.
Chains are deduplicated (two hits of one chain give one timeline) and ordered by their best
hit. Nothing relevant → the PALACE line, as for recall.
"""

from __future__ import annotations

from typing import Any

from nika_tui.domain import protocol_replies as rep
from nika_tui.domain import protocol_requests as req
from nika_tui.domain.memory import Layer
from nika_tui.domain.ports import PointFilter
from nika_tui.domain.requests import RecallQuery
from nika_tui.domain.timeline import versions
from nika_tui.engine.context import EngineContext
from nika_tui.engine.history import earlier_snapshots, history
from nika_tui.engine.recall import PALACE_MIN_COSINE, palace_line


def timeline(ctx: EngineContext, q: RecallQuery) -> dict[str, Any]:
    """The timelines of the facts ``q`` names (see the module docstring).

    Returns:
        ``{"query", "tenant_id", "timelines": [[version, …], …], "palace", "snapshots"}``
        (``snapshots``: per timeline, the snapshots holding its older versions).
    """
    config = ctx.tenant(q.tenant_id)
    vector = ctx.embedder.embed([q.query])[0]
    equals = {"project_id": q.project_id} if q.project_id else {}
    layers = [q.layer] if q.layer is not None else list(Layer)
    scored: list[tuple[float, str]] = []
    for layer in layers:
        for p in ctx.vectors.search_dense(
            q.tenant_id,
            layer,
            vector,
            flt=PointFilter(equals=equals),
            limit=q.limit * 4,
        ):
            # A dense hit's score is its cosine: the PALACE floor applies as in recall.
            if p.score >= PALACE_MIN_COSINE:
                scored.append((p.score, p.id))
    scored.sort(reverse=True)
    seen: set[str] = set()
    out: list[list[dict[str, object]]] = []
    snapshots: list[list[str]] = []
    for _cos, point_id in scored:
        if point_id in seen:
            continue
        chain = history(ctx, q.tenant_id, point_id)
        seen.update(r.id for r in chain)
        out.append([v.to_json() for v in versions(chain)])
        snapshots.append(earlier_snapshots(ctx, q.tenant_id, chain))
        if len(out) >= q.limit:
            break
    return {
        "query": q.query,
        "tenant_id": q.tenant_id,
        "timelines": out,
        "palace": None if out else palace_line(config.language, q.query),
        "snapshots": snapshots,
    }


def timeline_op(ctx: EngineContext, r: req.TimelineRequest) -> rep.TimelineReply:
    return rep.TimelineReply(**timeline(ctx, r.query))
