"""Approved debt actions that changed nothing ("held"), and what they mean for the ingest pause.

An approved action whose executor changed nothing is remembered with the tenant's memory counts
(``debt:noop:{action}``); while the counts are the same, the audit does not ask it again
(decision 221). :mod:`.actions` writes the mark, :mod:`.run` reads it.
"""

from __future__ import annotations

import json

from nika_tui.engine.context import EngineContext
from nika_tui.services import redis_keys


def memory_fingerprint(ctx: EngineContext, tenant_id: str) -> str:
    """Current / retired counts per layer: what "the memories changed" compares."""
    from nika_tui.engine.rem.run import counts

    return json.dumps(counts(ctx, tenant_id), sort_keys=True)


def unchanged_since_noop(ctx: EngineContext, tenant_id: str, action: str) -> bool:
    """True when an approved ``action`` changed nothing and the memories have not moved since."""
    held = ctx.redis.get(redis_keys.debt_noop(tenant_id, action))
    return held is not None and str(held) == memory_fingerprint(ctx, tenant_id)
