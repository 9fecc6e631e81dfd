"""Audits and REM passes with several workers live: each worker runs them for the tenants whose
lease it holds, and only those (a tenant's passes write its store: one writer per tenant)."""

from __future__ import annotations

from typing import Any

import redis

from nika_tui.domain.tenant import AutoActions, AutoMode
from nika_tui.engine.audit.history import audit_history
from nika_tui.engine.context import EngineContext
from nika_tui.engine.debt.schedule import DebtScheduler
from nika_tui.engine.worker import Worker
from nika_tui.engine.worker_keys import preferred
from nika_tui.services import redis_keys
from nika_tui.services.config_store import load_tenant, save_tenant

GROUP = redis_keys.INGEST_GROUP


def test_each_worker_audits_the_tenants_it_holds(
    debt_ctx: EngineContext, make_tenant: Any, redis_client: redis.Redis, tmp_path: Any
) -> None:
    # acme (debt_ctx's tenant) and one more tenant that the other worker prefers.
    owner = preferred("acme", ["wa", "wb"])
    other = "wb" if owner == "wa" else "wa"
    second = next(t for t in (f"t{i}" for i in range(99)) if preferred(t, ["wa", "wb"]) == other)
    make_tenant(second)
    for tenant in ("acme", second):
        config = load_tenant(tenant)
        save_tenant(
            config.model_copy(update={"auto_actions": AutoActions(rem=AutoMode.AUTONOMOUS)})
        )
    workers = {w: Worker(redis_client, w, tmp_path / w, None, ttl_s=60) for w in ("wa", "wb")}
    for w in ("wa", "wb", "wa"):
        workers[w].tick(GROUP, force=True)  # both live, each sees the other
    ticks = {"t": 0.0}
    schedulers = {
        w: DebtScheduler(debt_ctx, check_every_s=60, monotonic=lambda: ticks["t"]) for w in workers
    }
    ticks["t"] += 61

    done_owner = schedulers[owner].tick(workers[owner].owns)
    done_other = schedulers[other].tick(workers[other].owns)

    assert done_owner == ["audit:acme", "rem:acme"]
    assert done_other == [f"audit:{second}", f"rem:{second}"]
    assert workers[owner].held.keys() == {"acme"}, "the pass's tenant was acquired first"
    assert workers[other].held.keys() == {second}
    assert len(audit_history(debt_ctx, "acme")) == 1, "audited once, not by both workers"
    assert len(audit_history(debt_ctx, second)) == 1
