"""When the service runs a REM pass by itself (kernels asleep, last pass old enough), and the
``rem.run`` op.
"""

from __future__ import annotations

from nika_tui.domain import protocol_replies as rep
from nika_tui.domain import protocol_requests as req
from nika_tui.engine.context import EngineContext
from nika_tui.engine.rem.journal import last_run_at
from nika_tui.engine.rem.run import DEFAULT_WINDOW, STEPS, run_rem
from nika_tui.errors import ValidationFailed

_SLEEPING = ("idle", "exited", "error")


def kernels_idle(ctx: EngineContext, tenant_id: str, idle_s: float) -> bool:
    """True when every kernel of the tenant has been idle (or gone) for ``idle_s`` seconds.

    A tenant without any kernel record has nothing awake: it counts as idle.
    """
    from nika_tui.services.kernel_store import read_status

    now = ctx.clock()
    status = read_status(ctx.redis, tenant_id, now)
    if status is None:
        return True
    if status.state.value not in _SLEEPING:
        return False
    since = status.state_at or status.last_event_at
    return since is None or (now - since).total_seconds() >= idle_s


def rem_due(ctx: EngineContext, tenant_id: str) -> bool:
    """True when an automatic pass should run: kernels asleep and the last pass old enough."""
    last = last_run_at(tenant_id, ctx.settings.roots)
    interval = ctx.settings.rem_interval_s
    if last is not None and (ctx.clock() - last).total_seconds() < interval:
        return False
    return kernels_idle(ctx, tenant_id, ctx.settings.rem_idle_s)


def _rem_tenants(ctx: EngineContext, tenant_id: str | None) -> list[str]:
    from nika_tui.services.config_store import list_tenant_ids

    return [tenant_id] if tenant_id else list_tenant_ids(ctx.settings.roots)


def rem_run_op(ctx: EngineContext, r: req.RemRunRequest) -> rep.RemRunReply:
    steps = r.steps or list(STEPS)
    if any(s not in STEPS for s in steps):
        raise ValidationFailed("unknown REM step", "use any of: " + ", ".join(STEPS))
    window = None if r.all else DEFAULT_WINDOW
    return rep.RemRunReply(
        {
            t: run_rem(ctx, t, steps=steps, window=window, trigger="demand").summary()
            for t in _rem_tenants(ctx, r.tenant_id)
        }
    )
