"""RPC ops an agent reaches through the MCP tools: project counts, retire, correct, reviews.

Agents never delete. An agent's retire (or the retirement of a fact it corrected) is applied
at once only when the tenant's ``agents.retire_needs_review`` is false; otherwise it waits in
the review queue for a person, like an UNCERTAIN pair. An agent resolves review items only
when the tenant's ``agents.resolve_reviews`` allows it. The tenant of every op comes from the
MCP server's environment (the kernel's tenant), never from the agent.
"""

from __future__ import annotations

import heapq
from collections import Counter

from nika_tui.domain import protocol_replies as rep
from nika_tui.domain import protocol_requests as req
from nika_tui.domain.memory import Layer, MemoryRecord, Status
from nika_tui.domain.ports import PointFilter
from nika_tui.domain.verdicts import Judgement, Verdict
from nika_tui.engine.context import EngineContext
from nika_tui.engine.memory_ops import decision_of
from nika_tui.engine.retire import load_record, retire
from nika_tui.engine.review import enqueue_many, new_item, resolve
from nika_tui.errors import ValidationFailed

PROJECT_SCROLL_BATCH = 512


def project_counts(ctx: EngineContext, tenant_id: str) -> dict[str, dict[str, dict[str, int]]]:
    """``{project: {layer: {current, retired}}}`` over every memory of the tenant.

    One scroll of both layers (the store has no group-by): linear in the tenant's size.
    """
    ctx.tenant(tenant_id)
    counts: Counter[tuple[str, str, str]] = Counter()
    for layer in Layer:
        for p in ctx.vectors.scroll(tenant_id, layer, None, batch=PROJECT_SCROLL_BATCH):
            counts[
                (str(p.payload.get("project_id") or ""), layer.value, str(p.payload["status"]))
            ] += 1
    out: dict[str, dict[str, dict[str, int]]] = {}
    for (project, layer_name, status), n in sorted(counts.items()):
        per_layer = out.setdefault(project, {}).setdefault(layer_name, {s.value: 0 for s in Status})
        per_layer[status] = n
    return out


def projects_op(ctx: EngineContext, r: req.ProjectsRequest) -> rep.ProjectsReply:
    return rep.ProjectsReply(project_counts(ctx, r.tenant_id))


RECENT_MAX = 50
RECENT_DEFAULT = 10


def recent_op(ctx: EngineContext, r: req.RecentRequest) -> rep.RecentReply:
    """The newest current semantic memories (by valid time) of a tenant or one project.

    One scroll of the current semantic memories (no ordered index on valid time): linear in
    the tenant's current facts, fine for a once-per-session digest.
    """
    tenant_id = r.tenant_id
    ctx.tenant(tenant_id)
    limit = max(1, min(RECENT_DEFAULT if r.limit is None else r.limit, RECENT_MAX))
    equals = {"status": Status.CURRENT.value}
    if r.project_id:
        equals["project_id"] = r.project_id
    newest = heapq.nlargest(
        limit,
        (
            p.payload
            for p in ctx.vectors.scroll(
                tenant_id, Layer.SEMANTIC, PointFilter(equals=equals), batch=PROJECT_SCROLL_BATCH
            )
        ),
        key=lambda payload: float(payload.get("valid_from_ts") or 0.0),
    )
    return rep.RecentReply(
        [MemoryRecord.from_payload(dict(p)).model_dump(mode="json") for p in newest]
    )


def agent_retire_op(ctx: EngineContext, r: req.AgentRetireRequest) -> rep.AgentRetireReply:
    """Retire one memory for an agent, or queue the retirement for a person's review."""
    return agent_retire(
        ctx, r.tenant_id, r.memory_id, r.reason, r.agent or "agent", r.superseded_by or ""
    )


def agent_retire(
    ctx: EngineContext,
    tenant_id: str,
    memory_id: str,
    reason: str,
    agent: str,
    new_id: str = "",
) -> rep.AgentRetireReply:
    """Retire ``memory_id`` for an agent now, or queue it for review (the tenant's setting).

    Returns:
        Its ``status``: retired, review (with the ``review_id``) or already-retired.

    Raises:
        ValidationFailed: no such memory (or replacement) in this tenant.
    """
    config = ctx.tenant(tenant_id)
    reason = reason[:500]
    old = load_record(ctx, tenant_id, memory_id)
    if old is None:
        raise ValidationFailed(
            f"no memory {memory_id} in this tenant",
            "take an id from memory_recall (ids are shown in brackets)",
        )
    new = load_record(ctx, tenant_id, new_id) if new_id else None
    if new_id and new is None:
        raise ValidationFailed(f"no memory {new_id} in this tenant", "pass an existing id")
    if old.status is Status.RETIRED:
        return rep.AgentRetireReply("already-retired", old.id, superseded_by=old.superseded_by)
    if not config.agents.retire_needs_review:
        retire(ctx, tenant_id, old.layer, old.id, new_id or None, f"{agent}: {reason}")
        return rep.AgentRetireReply("retired", old.id, superseded_by=new_id or None)
    judgement = Judgement(verdict=Verdict.UNCERTAIN, reason=f"{agent} asks: {reason}", judge=agent)
    if new is not None:
        item = new_item(ctx, old, new, judgement)
    else:
        # A retire without a replacement: the "new" side of the pair names the request.
        item = new_item(ctx, old, old, judgement).model_copy(
            update={
                "id": f"r{old.id.replace('-', '')[:11]}",
                "new_id": "",
                "new_text": f"(retire: {reason})",
                "new_valid_from": ctx.clock(),
            }
        )
    queued = enqueue_many(ctx, [item])[0]
    return rep.AgentRetireReply("review", old.id, review_id=queued.id)


def agent_review_resolve_op(
    ctx: EngineContext, r: req.AgentReviewResolveRequest
) -> rep.AgentReviewResolveReply:
    """Resolve a review item for an agent, when the tenant allows agents to."""
    tenant_id = r.tenant_id
    if not ctx.tenant(tenant_id).agents.resolve_reviews:
        raise ValidationFailed(
            f"tenant {tenant_id!r} does not let agents resolve reviews",
            f"ask a person to run `nika review approve|reject --tenant {tenant_id} ID`, or set "
            "agents.resolve_reviews: true in the tenant's config",
        )
    decision = decision_of(r.decision)
    note = f"by {r.agent or 'agent'}: {r.note or ''}".strip()
    item = resolve(ctx, tenant_id, r.id, decision, note)
    return rep.AgentReviewResolveReply(item.model_dump(mode="json"))
