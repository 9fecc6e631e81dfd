"""Calls about "every tenant", made one tenant at a time.

The memory service refuses an RPC that names no tenant (``engine/tenant_scope.py``): with
several workers each tenant is answered by its own holder. A caller meaning every tenant
(``nika audit``, ``nika rem run`` without ``--tenant``) asks each one and merges the replies'
``tenants`` maps, which is what a single "all tenants" reply looked like.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from nika_tui.paths import Roots
from nika_tui.services.config_store import list_tenant_ids


class Caller(Protocol):
    """What of :class:`~nika_tui.services.memory_client.MemoryClient` this needs."""

    def call(
        self, op: str, body: Mapping[str, Any], timeout: float | None = None
    ) -> dict[str, Any]: ...


def call_per_tenant(
    client: Caller,
    op: str,
    body: Mapping[str, Any],
    timeout: float,
    where: Roots | None = None,
    tenants: Sequence[str] | None = None,
) -> dict[str, Any]:
    """``op`` for the body's tenant, or for each configured tenant when it names none.

    Args:
        client: The memory client.
        op: The op's name.
        body: The request's body.
        timeout: Seconds per call.
        where: The roots holding the tenants' configs (None: those of ``os.environ``).
        tenants: The tenants to ask (None: every configured one).

    Returns:
        ``{"tenants": {tenant: result}}`` merged from every reply.
    """
    if body.get("tenant_id"):
        return client.call(op, body, timeout=timeout)
    merged: dict[str, Any] = {}
    for tenant_id in tenants if tenants is not None else list_tenant_ids(where):
        one = client.call(op, {**body, "tenant_id": tenant_id}, timeout=timeout)
        merged.update(one.get("tenants", {}))
    return {"tenants": merged}
