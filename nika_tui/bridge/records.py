"""What the bridge leaves for people to see: last messages, errors, the tenant's bus.

The dashboard and ``nika bridge status`` read these (:mod:`nika_tui.bridge.status`). Texts are
kept as short previews: the full conversation lives with the agent and its memory.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import redis

from nika_tui.domain.bridge import InboundMessage
from nika_tui.paths import Roots
from nika_tui.services import bridge_keys as keys

PREVIEW_CHARS = 120


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """One line, cut with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def record_message(
    client: redis.Redis,
    where: Roots,
    tenant_id: str,
    direction: str,
    message: InboundMessage,
    text: str,
    status: str,
    now: datetime,
) -> None:
    """One bridged message (``in`` or ``out``) on the tenant's last-messages list and bus."""
    entry = {
        "at": now.isoformat(),
        "direction": direction,
        "gateway": message.gateway.value,
        "sender": message.sender,
        "message_id": message.message_id,
        "status": status,
        "text": preview(text),
    }
    pipe = client.pipeline()
    pipe.lpush(keys.last(tenant_id), json.dumps(entry))
    pipe.ltrim(keys.last(tenant_id), 0, keys.LAST_KEEP - 1)
    pipe.execute()
    from nika_tui.services.bus import open_bus

    open_bus(tenant_id, where).append(f"bridge.{direction}", entry, now=now)


def record_error(
    client: redis.Redis,
    where: Roots,
    tenant_id: str | None,
    gateway: str,
    reason: str,
    now: datetime,
    **extra: Any,
) -> None:
    """One refusal or failure: on the tenant's list and bus when known, else the global list."""
    entry = {"at": now.isoformat(), "gateway": gateway, "reason": reason[:300], **extra}
    key = keys.tenant_errors(tenant_id) if tenant_id else keys.ERRORS
    pipe = client.pipeline()
    pipe.lpush(key, json.dumps(entry))
    pipe.ltrim(key, 0, keys.ERRORS_KEEP - 1)
    pipe.execute()
    if tenant_id:
        from nika_tui.services.bus import open_bus

        open_bus(tenant_id, where).append("bridge.error", entry, now=now)
