"""Approved debt actions that changed nothing ("held"), and what they mean for the ingest pause.

An approved action whose executor changed nothing is remembered with the tenant's memory counts
(``debt:noop:{action}``); while the counts are the same, the audit does not ask it again
(decision 221). :mod:`.actions` writes the mark, :mod:`.run` reads it.

The critical level pauses bulk ingestion until a person decides (decision 446): a metric whose
action is held has had that decision, and nothing nika can do will move it until the memories
change, so it no longer keeps the pause. The audit reports such reasons as ``pause_waived``
(and on the bus), and approving the no-op settles the pause at once and says so.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from pydantic import ValidationError

from nika_tui.domain.debt import MetricReport, critical_reasons
from nika_tui.domain.debt_tables import PAUSE_TTL_S, MetricStatus
from nika_tui.engine.audit.history import audit_history
from nika_tui.engine.context import EngineContext
from nika_tui.services import redis_keys

PAUSE_PREFIX = "debt:"
"""Value prefix of an ``ingest_paused`` set by the audit (it only clears its own pause)."""
WAIVED_WHY = "the action you approved for it changed nothing; it is not paused for that again"


def memory_fingerprint(ctx: EngineContext, tenant_id: str) -> str:
    """Current / retired counts per layer: what "the memories changed" compares."""
    from nika_tui.engine.rem.run import counts

    return json.dumps(counts(ctx, tenant_id), sort_keys=True)


def unchanged_since_noop(ctx: EngineContext, tenant_id: str, action: str) -> bool:
    """True when an approved ``action`` changed nothing and the memories have not moved since."""
    held = ctx.redis.get(redis_keys.debt_noop(tenant_id, action))
    return held is not None and str(held) == memory_fingerprint(ctx, tenant_id)


def held_actions(ctx: EngineContext, tenant_id: str, metrics: Iterable[MetricReport]) -> set[str]:
    """The actions of the metrics in alert that were approved and changed nothing since."""
    wanted = {m.action for m in metrics if m.status is MetricStatus.ALERT}
    if not wanted:
        return set()
    return {a for a in wanted if unchanged_since_noop(ctx, tenant_id, a)}


@dataclass(frozen=True, slots=True)
class PauseDecision:
    """What pauses bulk ingestion after an audit, and what no longer does."""

    reasons: list[str]
    """The critical reasons that pause it (empty: not paused)."""
    waived: list[str]
    """Critical reasons that do not, because their metric's action is held."""


def settle_pause(
    ctx: EngineContext, tenant_id: str, metrics: list[MetricReport], held: Collection[str]
) -> PauseDecision:
    """Set or lift the tenant's debt pause from ``metrics``, leaving out the ``held`` actions'.

    A pause set by someone else (its value does not start with :data:`PAUSE_PREFIX`) is never
    lifted here.
    """
    pausing = critical_reasons([m for m in metrics if m.action not in held])
    waived = [r for r in critical_reasons(metrics) if r not in pausing]
    key = redis_keys.ingest_paused(tenant_id)
    if pausing:
        ctx.redis.set(key, (PAUSE_PREFIX + "; ".join(pausing))[:500], ex=PAUSE_TTL_S)
    else:
        current = ctx.redis.get(key)
        if current is not None and str(current).startswith(PAUSE_PREFIX):
            ctx.redis.delete(key)
    return PauseDecision(pausing, waived)


def settle_after_noop(ctx: EngineContext, tenant_id: str) -> str:
    """After an approved action changed nothing: the pause of the latest audit, decided again
    without the held actions. Returns what happened to it, for the person ('' when bulk
    ingestion was not paused by an audit, or the latest audit cannot be read)."""
    current = ctx.redis.get(redis_keys.ingest_paused(tenant_id))
    if current is None or not str(current).startswith(PAUSE_PREFIX):
        return ""
    latest = audit_history(ctx, tenant_id, 1)
    try:
        metrics = [MetricReport.model_validate(m) for m in latest[-1]["metrics"]]
    except (IndexError, KeyError, TypeError, ValidationError):
        return ""
    decision = settle_pause(ctx, tenant_id, metrics, held_actions(ctx, tenant_id, metrics))
    if decision.reasons:
        return "bulk ingestion stays paused: " + "; ".join(decision.reasons)
    return "bulk ingestion resumes: nothing else keeps it paused"
