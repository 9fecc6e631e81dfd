"""Confirmations: what a tenant's automation asks a person before acting, one Redis hash each.

Every feature that needs a yes (compaction, purge, REM, scale, quotas, tuning) queues its item
here; the dashboard's confirmations screen and ``nika ... approve`` read and resolve them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import redis

from nika_tui.services import redis_keys


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def pending_confirmation(client: redis.Redis, tenant_id: str, kind: str) -> dict[str, Any] | None:
    """A pending confirmation of ``kind`` for the tenant, if one is queued."""
    return next(iter(pending_confirmations(client, tenant_id, kind)), None)


def pending_confirmations(client: redis.Redis, tenant_id: str, kind: str) -> list[dict[str, Any]]:
    """Every pending confirmation of ``kind`` for the tenant."""
    raw: dict[str, str] = client.hgetall(redis_keys.confirmations(tenant_id))  # type: ignore[assignment]
    out: list[dict[str, Any]] = []
    for value in raw.values():
        try:
            item = json.loads(value)
        except json.JSONDecodeError:
            continue
        if isinstance(item, dict) and item.get("kind") == kind and item.get("status") == "pending":
            out.append(item)
    return out


def queue_confirmation(
    client: redis.Redis,
    tenant_id: str,
    kind: str,
    title: str,
    detail: str,
    now: datetime,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write one pending confirmation into the tenant's ``confirmations`` hash and return it.

    ``extra`` fields (what approving acts on) are written with it, in the one ``HSET``: a
    reader never sees the confirmation without them.
    """
    item: dict[str, Any] = {
        **(extra or {}),
        "id": uuid.uuid4().hex,
        "tenant_id": tenant_id,
        "kind": kind,
        "title": title,
        "detail": detail,
        "created_at": _iso(now),
        "status": "pending",
    }
    client.hset(redis_keys.confirmations(tenant_id), item["id"], json.dumps(item))
    return item
