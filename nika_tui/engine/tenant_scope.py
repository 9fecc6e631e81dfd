"""Every RPC that touches a tenant's data names its tenant, and the service checks it.

With several workers each tenant has exactly one writer, and an RPC entry goes to the worker
holding its tenant's lease (``Worker.keep`` routes by the body's ``tenant_id``). An RPC without
a tenant would be answered by whichever worker read it, over tenants it does not hold (an audit
of "every tenant" writing others' stores). So the service refuses it: callers that mean every
tenant ask each tenant in turn (:func:`nika_tui.services.tenant_calls.call_per_tenant`). Before
an op runs, the tenant must be a configured one and, in lease mode, held by this worker (the
routing already sent it here; the check makes a routing bug an error, not a second writer).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from nika_tui.domain.protocol import Op
from nika_tui.engine.context import EngineContext
from nika_tui.errors import NikaError, ValidationFailed

TENANTLESS_OPS: frozenset[str] = frozenset({Op.PING})
"""Ops that read or write no tenant's data."""


def check_rpc_tenant(
    ctx: EngineContext,
    op: str,
    body: Mapping[str, Any],
    holds: Callable[[str], bool] | None,
) -> None:
    """Refuse an RPC that does not name a configured tenant this worker holds.

    Args:
        ctx: The service's context (tenant configs).
        op: The op name.
        body: The request body.
        holds: ``Worker.holds`` in lease mode; ``None`` when this service serves every tenant.

    Raises:
        ValidationFailed: no ``tenant_id``, or a malformed one.
        TenantNotFound: no such tenant.
        NikaError: the tenant is held by another worker.
    """
    if op in TENANTLESS_OPS:
        return
    tenant = body.get("tenant_id")
    if not isinstance(tenant, str) or not tenant:
        raise ValidationFailed(
            f"{op} needs a tenant_id: every request on memory names its tenant",
            "pass the tenant (the CLI asks each tenant in turn when none is given)",
        )
    ctx.tenant(tenant)
    if holds is not None and not holds(tenant):
        raise NikaError(
            f"this worker does not hold tenant {tenant} (it moved or its lease lapsed)",
            "retry: the request is routed to the tenant's current worker",
        )
