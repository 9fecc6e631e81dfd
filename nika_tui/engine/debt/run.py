"""One audit run that acts: measure, record in ``debt_history`` and on the bus, then apply or
queue the actions the tenant's auto-actions allow, and pause bulk ingestion past the critical
level (not for a metric whose approved action changed nothing: :mod:`.pause`).

The measuring lives in :mod:`nika_tui.engine.audit`; this module sits above it and above the
executors (:mod:`nika_tui.engine.debt.actions`), so neither imports the other back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from nika_tui.domain import debt, debt_tables
from nika_tui.domain import protocol_replies as rep
from nika_tui.domain import protocol_requests as req
from nika_tui.domain.debt import AuditReport
from nika_tui.domain.debt_results import NOT_ASKED_AGAIN
from nika_tui.domain.debt_tables import Decision
from nika_tui.engine.audit.history import HISTORY_MAXLEN, requested_tenants
from nika_tui.engine.audit.measure import DUPLICATE_SAMPLE, measure
from nika_tui.engine.context import EngineContext
from nika_tui.engine.debt.actions import apply_action
from nika_tui.engine.debt.pause import WAIVED_WHY, held_actions, settle_pause
from nika_tui.errors import NikaError
from nika_tui.services import redis_keys
from nika_tui.services.confirmation_queue import pending_confirmation, queue_confirmation


@dataclass
class AuditOutcome:
    """One audit: the report, the decided actions and what was done about them."""

    report: AuditReport
    inventory: dict[str, Any]
    actions: list[dict[str, Any]] = field(default_factory=list)
    review_request: str | None = None
    ingest_paused: bool = False
    pause_waived: list[str] = field(default_factory=list)
    """Critical reasons that do not pause ingestion: their approved action changed nothing."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the ``nika audit --json`` document for one tenant)."""
        data = self.report.model_dump(mode="json")
        data["inventory"] = self.inventory
        data["actions"] = self.actions
        data["review_request"] = self.review_request
        data["ingest_paused"] = self.ingest_paused
        data["pause_waived"] = self.pause_waived
        return data


def _apply(ctx: EngineContext, tenant_id: str, kind: debt_tables.ActionKind) -> dict[str, Any]:
    """Run the executor of one action (autonomous mode; see :mod:`.actions`)."""
    try:
        return apply_action(ctx, tenant_id, kind)
    except NikaError as exc:
        # A failed action is reported; the audit itself is still recorded.
        return {"done": False, "error": exc.message, "hint": exc.hint}


def run_audit(
    ctx: EngineContext,
    tenant_id: str,
    *,
    sample_size: int = DUPLICATE_SAMPLE,
    seed: int | None = None,
    act: bool = True,
) -> AuditOutcome:
    """Measure, record in ``debt_history`` and on the bus, then act as auto-actions allow.

    Args:
        ctx: Engine context.
        tenant_id: The tenant.
        sample_size: Points sampled for duplicate_rate.
        seed: Random seed for reproducible samples.
        act: False to measure and record only (no action, no pause, no review request).

    Returns:
        The outcome.
    """
    report, inv = measure(ctx, tenant_id, sample_size=sample_size, seed=seed)
    outcome = AuditOutcome(
        report,
        {"total": inv.total, "current": inv.current, "retired": inv.retired,
         "asserted_24h": inv.asserted_24h, "per_layer": inv.per_layer},
    )  # fmt: skip
    config = ctx.tenant(tenant_id)
    now = report.at
    if act:
        held = held_actions(ctx, tenant_id, report.metrics)
        for decision in debt.decide_actions(report, config.auto_actions):
            entry = decision.to_dict()
            if decision.decision is Decision.APPLY:
                entry["result"] = _apply(ctx, tenant_id, decision.action)
            elif decision.decision is Decision.CONFIRM and decision.action.value in held:
                entry["skipped"] = f"approved before and changed nothing; {NOT_ASKED_AGAIN}"
            elif decision.decision is Decision.CONFIRM:
                kind = f"debt.{decision.action.value}"
                existing = pending_confirmation(ctx.redis, tenant_id, kind)
                item = existing or queue_confirmation(
                    ctx.redis,
                    tenant_id,
                    kind,
                    f"memory debt: {decision.text}",
                    f"metrics in alert: {', '.join(decision.metrics)}",
                    now,
                )
                if existing is None:
                    ctx.bus(tenant_id).append(
                        "confirmation.requested", {"id": item["id"], "kind": kind}, now=now
                    )
                entry["confirmation_id"] = item["id"]
            outcome.actions.append(entry)
        from nika_tui.engine.reset_trigger import decide_reset

        reset_entry = decide_reset(ctx, tenant_id, report.strategies)  # strategy A (issue 22)
        if reset_entry is not None:
            outcome.actions.append(reset_entry)
        if report.critical:
            line = ctx.bus(tenant_id).append(
                "debt.review_request",
                {"reasons": report.critical_reasons, "report": report.model_dump(mode="json")},
                now=now,
            )
            outcome.review_request = str(line["id"])
        pause = settle_pause(ctx, tenant_id, report.metrics, held)
        outcome.ingest_paused = bool(pause.reasons)
        outcome.pause_waived = pause.waived
        if pause.waived:  # said, not silent: critical, yet bulk writes go on (decision 446)
            ctx.bus(tenant_id).append(
                "debt.pause_waived", {"reasons": pause.waived, "why": WAIVED_WHY}, now=now
            )
    data = outcome.to_dict()
    ctx.redis.xadd(
        redis_keys.debt_history(tenant_id),
        {"at": now.isoformat(), "report": json.dumps(data, default=str)},
        maxlen=HISTORY_MAXLEN,
        approximate=True,
    )
    ctx.bus(tenant_id).append(
        "debt.audit",
        {
            "critical": report.critical,
            "metrics": {
                m.name: {"value": m.value, "status": m.status.value} for m in report.metrics
            },
            "actions": [
                {"action": a["action"], "decision": a["decision"]} for a in outcome.actions
            ],
        },
        now=now,
    )
    return outcome


def audit_op(ctx: EngineContext, r: req.AuditRequest) -> rep.AuditReply:
    sample = DUPLICATE_SAMPLE if r.sample_size is None else r.sample_size
    act = True if r.act is None else r.act
    out = {}
    for tenant_id in requested_tenants(ctx, r.tenant_id):
        result = run_audit(ctx, tenant_id, sample_size=sample, seed=r.seed, act=act)
        out[tenant_id] = result.to_dict()
    return rep.AuditReply(out)
