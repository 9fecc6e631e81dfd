"""The bridge's state as people see it: ``nika bridge status`` and the dashboard's read side.

Reads ``bridge.yaml`` (links) and Redis (server heartbeat, pending inbox and outbox, last
messages, errors); it starts nothing and imports no HTTP server, tmux or torch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import redis

from nika_tui.domain.bridge import BridgeConfig, Gateway
from nika_tui.services import bridge_keys as keys

if TYPE_CHECKING:
    from nika_tui.dashboard.model import BridgeView
    from nika_tui.paths import Roots


@dataclass(frozen=True)
class TenantBridge:
    """One tenant's side of the bridge."""

    tenant_id: str
    senders: list[dict[str, str]]
    """``{gateway, sender}`` of each linked sender."""
    pending: int
    """Messages waiting for the kernel."""
    last: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class BridgeStatus:
    """The whole bridge."""

    running: bool
    url: str
    gateways: list[str]
    """Gateways the running server serves."""
    missing: dict[str, list[str]]
    """Gateway → settings it lacks (names, never values)."""
    outbox_pending: int
    dead: int
    tenants: list[TenantBridge]
    errors: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        """Plain values."""
        return asdict(self)


def _json_list(client: redis.Redis, key: str, limit: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for raw in client.lrange(key, 0, limit - 1):
        try:
            out.append(json.loads(raw))
        except (TypeError, json.JSONDecodeError):
            continue
    return out


def tenant_bridge(
    client: redis.Redis, config: BridgeConfig, tenant_id: str, limit: int = 10
) -> TenantBridge:
    """One tenant's links, pending messages, last messages and errors."""
    senders = [{"gateway": ln.gateway.value, "sender": ln.sender}
               for ln in config.links_of(tenant_id)]  # fmt: skip
    return TenantBridge(
        tenant_id=tenant_id,
        senders=senders,
        pending=int(client.xlen(keys.inbox(tenant_id))),
        last=_json_list(client, keys.last(tenant_id), limit),
        errors=_json_list(client, keys.tenant_errors(tenant_id), limit),
    )


def read_status(
    client: redis.Redis, config: BridgeConfig, tenant_ids: list[str] | None = None
) -> BridgeStatus:
    """The bridge's state (every linked tenant unless ``tenant_ids`` is given)."""
    server: Mapping[str, str] = client.hgetall(keys.SERVER)  # type: ignore[assignment]
    running = bool(client.exists(keys.SERVER_HEARTBEAT))
    ids = tenant_ids if tenant_ids is not None else sorted({ln.tenant_id for ln in config.links})
    missing = json.loads(server.get("missing") or "{}") if server else {}
    return BridgeStatus(
        running=running,
        url=str(server.get("url", "")) if running else "",
        gateways=json.loads(server.get("gateways") or "[]") if running else [],
        missing={g.value: list(missing.get(g.value, [])) for g in Gateway},
        outbox_pending=int(client.xlen(keys.OUTBOX)),
        dead=int(client.xlen(keys.DEAD)),
        tenants=[tenant_bridge(client, config, t) for t in ids],
        errors=_json_list(client, keys.ERRORS, 10),
    )


def tenant_view(client: redis.Redis, where: Roots, tenant_id: str) -> BridgeView | None:
    """The tenant detail screen's bridge section (None when the tenant has no bridge at all)."""
    from nika_tui.bridge.settings import load_config
    from nika_tui.dashboard.model import BridgeView

    config = load_config(where)
    tenant = tenant_bridge(client, config, tenant_id, limit=6)
    if not (tenant.senders or tenant.last or tenant.errors or tenant.pending):
        return None
    running = bool(client.exists(keys.SERVER_HEARTBEAT))
    served = json.loads(str(client.hget(keys.SERVER, "gateways") or "[]")) if running else []
    return BridgeView(
        running=running,
        gateways=tuple(served),
        senders=tuple(f"{s['gateway']}:{s['sender']}" for s in tenant.senders),
        pending=tenant.pending,
        last=tuple(
            f"{e['at'][11:19]} {'→' if e['direction'] == 'out' else '←'} {e['gateway']} "
            f"{e['sender']}: {e['text']}"
            for e in tenant.last
        ),
        errors=tuple(f"{e['at'][11:19]} {e['gateway']}: {e['reason']}" for e in tenant.errors[:3]),
    )
