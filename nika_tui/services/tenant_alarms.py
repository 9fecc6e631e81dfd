"""Tenant alarms in Redis: a tenant whose store failed, parked by the memory service.

The service writes them (:class:`nika_tui.engine.tenant_faults.TenantFaults`); the dashboard's
status line and ``nika doctor`` read them with :func:`read_alarms`. One hash,
:data:`~nika_tui.services.redis_keys.TENANT_ALARMS`: tenant id → JSON ``{reason, hint, kind,
since}``. No torch, qdrant or textual here: the dashboard's read side imports this.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

import redis

from nika_tui.services import redis_keys


@dataclass(frozen=True, slots=True)
class TenantAlarm:
    """Why a tenant's ingest is parked, and what to do."""

    tenant_id: str
    reason: str
    hint: str
    kind: str
    """The error class (``ShardMissing``, ``StoreUnavailable``…)."""
    since: str
    """ISO-8601 time the tenant was first parked."""

    def line(self) -> str:
        """One line for a status bar or a doctor row."""
        return f"{self.tenant_id}: ingest parked since {self.since} — {self.reason}"


def read_alarms(r: redis.Redis) -> list[TenantAlarm]:
    """Every tenant alarm, sorted by tenant id (a malformed entry is shown as such)."""
    raw: Any = r.hgetall(redis_keys.TENANT_ALARMS)
    out: list[TenantAlarm] = []
    for tenant, value in sorted((raw or {}).items()):
        try:
            body = json.loads(value)
            if not isinstance(body, dict):
                raise ValueError(value)
        except ValueError:
            body = {"reason": "unreadable alarm entry", "hint": "", "kind": "?", "since": "?"}
        out.append(
            TenantAlarm(
                tenant_id=str(tenant),
                reason=str(body.get("reason", "")),
                hint=str(body.get("hint", "")),
                kind=str(body.get("kind", "")),
                since=str(body.get("since", "")),
            )
        )
    return out


def write_alarm(r: redis.Redis, alarm: TenantAlarm) -> None:
    """Raise (or refresh) one tenant's alarm, keeping its first ``since``."""
    raw: Any = r.hget(redis_keys.TENANT_ALARMS, alarm.tenant_id)
    since = alarm.since
    if raw:
        with contextlib.suppress(ValueError, AttributeError):
            since = str(json.loads(raw).get("since", since))
    body = {"reason": alarm.reason, "hint": alarm.hint, "kind": alarm.kind, "since": since}
    r.hset(redis_keys.TENANT_ALARMS, alarm.tenant_id, json.dumps(body))


def clear_alarms(r: redis.Redis, tenant_ids: list[str]) -> None:
    """Clear the alarms of tenants whose ingest works again."""
    if tenant_ids:
        r.hdel(redis_keys.TENANT_ALARMS, *tenant_ids)
