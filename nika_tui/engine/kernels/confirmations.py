"""Decisions waiting for a person: the tenant's ``confirmations`` hash (escalate mode).

Producers queue them (the 61% policy: ``compact``; the REM scheduler: ``rem.run``; purge:
``purge.apply``; the debt audit: ``debt.{action}``). A person approves or rejects one here:
approving runs exactly what the autonomous mode would have run, through the component that
owns it (the kernel manager for ``compact``, the memory service for the others); rejecting
only records the decision. Every decision is logged on the bus (``confirmation.resolved``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import redis

from nika_tui.domain import protocol_requests as req
from nika_tui.domain.tenant_id import check_tenant_id
from nika_tui.errors import ValidationFailed
from nika_tui.paths import Roots
from nika_tui.services import redis_keys
from nika_tui.services.bus import open_bus
from nika_tui.services.memory_client import MemoryClient

if TYPE_CHECKING:
    from nika_tui.settings import Settings


def list_confirmations(
    client: redis.Redis, tenant_id: str, include_resolved: bool = False
) -> list[dict[str, Any]]:
    """The tenant's confirmations, oldest first (pending only unless ``include_resolved``)."""
    raw: dict[str, str] = client.hgetall(redis_keys.confirmations(check_tenant_id(tenant_id)))  # type: ignore[assignment]
    items: list[dict[str, Any]] = []
    for key, value in raw.items():
        try:
            item = json.loads(value)
        except json.JSONDecodeError:
            item = {"id": key, "kind": "unreadable", "title": value[:80], "status": "unreadable"}
        if not isinstance(item, dict):
            continue
        item.setdefault("id", key)
        if include_resolved or item.get("status") == "pending":
            items.append(item)
    return sorted(items, key=lambda i: str(i.get("created_at", "")))


def _pending(client: redis.Redis, tenant_id: str, confirmation_id: str) -> dict[str, Any]:
    raw = client.hget(redis_keys.confirmations(tenant_id), confirmation_id)
    item = json.loads(str(raw)) if raw else None
    if not isinstance(item, dict) or item.get("status") != "pending":
        raise ValidationFailed(
            f"no pending confirmation {confirmation_id!r} for tenant {tenant_id}",
            f"list them with `nika confirm list --tenant {tenant_id}`",
        )
    return item


def _mark(
    client: redis.Redis,
    tenant_id: str,
    item: dict[str, Any],
    status: str,
    where: Roots,
    now: datetime,
) -> None:
    item.update(status=status, resolved_at=now.isoformat())
    client.hset(redis_keys.confirmations(tenant_id), str(item["id"]), json.dumps(item))
    open_bus(tenant_id, where).append(
        "confirmation.resolved",
        {"id": item["id"], "kind": item.get("kind"), "status": status},
        now=now,
    )


def resolve(
    client: redis.Redis,
    tenant_id: str,
    confirmation_id: str,
    approve: bool,
    *,
    settings: Settings,
    child_env: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Approve (run the action) or reject one pending confirmation; return what happened.

    Args:
        client: The shared Redis (the confirmations, the memory service's RPC).
        tenant_id: Whose confirmation.
        confirmation_id: Its id.
        approve: Run the action (``True``) or only record the rejection.
        settings: The process's settings (the roots of the tenant's bus, the kernels' knobs).
        child_env: The environment a kernel's tmux gets (``compact``) and the provider's keys
            are read from (``scale.*``); ``os.environ`` when ``None``.
        now: The decision's time (now when ``None``).

    Returns:
        ``{"id", "kind", "status"}``, and the action's ``"result"`` when approved.

    Raises:
        ValidationFailed: no pending confirmation has that id, or its kind is unknown.
        ServiceNotRunning: approving needs the memory service and it is down.
    """
    check_tenant_id(tenant_id)
    at = now or datetime.now(UTC)
    where = settings.roots
    item = _pending(client, tenant_id, confirmation_id)
    kind = str(item.get("kind", ""))
    if not approve:
        _mark(client, tenant_id, item, "rejected", where, at)
        return {"id": confirmation_id, "kind": kind, "status": "rejected"}
    memory = MemoryClient(client)
    result: dict[str, Any]
    if kind.startswith("debt."):
        # The engine marks it approved itself, then runs the action.
        result = memory.send(req.DebtApplyRequest(tenant_id, confirmation_id)).to_body()
        return {"id": confirmation_id, "kind": kind, "status": "approved", "result": result}
    if kind == "compact":
        from nika_tui.engine.kernels.manager import KernelManager

        # The agent whose context was full (a kernel with several agents); else the first.
        agent = str(item.get("agent") or "") or None
        command = KernelManager(settings, child_env=child_env, redis_client=client).send_compact(
            tenant_id, agent=agent
        )
        result = {"command": command}
    elif kind == "rem.run":
        result = memory.send(req.RemRunRequest(tenant_id), timeout=600).to_body()
    elif kind == "compress.reset":
        result = memory.send(req.CompressResetRequest(tenant_id), timeout=3600).report
    elif kind == "tune.adopt":
        result = memory.send(req.TuneAdoptRequest(tenant_id, str(item.get("detail", "")))).to_body()
    elif kind == "scale.apply":
        from nika_tui.scale.approve import approve_scale

        # The plan id, not the confirmation, is the idempotency key: applied at most once.
        plan_id = str(item.get("plan_id", ""))
        result = approve_scale(tenant_id, plan_id, settings, at, client, child_env)
    elif kind == "scale.orphan":
        from nika_tui.scale.reconcile_loop import approve_orphan

        # Deletes exactly the instance named, and only while no worker record tracks it.
        result = approve_orphan(
            tenant_id,
            str(item.get("provider", "")),
            str(item.get("instance_id", "")),
            where,
            client,
            child_env,
        )
    elif kind == "quota.pause":
        from nika_tui.quota.tokens import pause_kernel

        result = {"paused_pids": pause_kernel(client, tenant_id, at, where)}
    elif kind == "purge.apply":
        result = memory.send(req.PurgeApplyRequest(tenant_id, True), timeout=600).report
    else:
        raise ValidationFailed(
            f"confirmation {confirmation_id!r} has an unknown kind {kind!r}",
            "reject it, or upgrade nika-os",
        )
    _mark(client, tenant_id, item, "approved", where, at)
    return {"id": confirmation_id, "kind": kind, "status": "approved", "result": result}
