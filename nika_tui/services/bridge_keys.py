"""Every Redis key of the bridge (next to :mod:`nika_tui.services.redis_keys`' ``nika:`` space).

Light on purpose: the agent hooks import it (no HTTP, no tmux here).
"""

from __future__ import annotations

PREFIX = "nika:bridge"
GROUP = "bridge"
"""Consumer group of the inbox and outbox streams."""

OUTBOX = f"{PREFIX}:outbox"
"""Stream of replies to send (field ``out``: JSON {tenant_id, kind, message, text})."""
DEAD = f"{PREFIX}:dead"
"""Stream of replies a gateway refused for good (kept with the reason, never dropped)."""
ATTEMPTS = f"{PREFIX}:attempts"
"""Hash: outbox entry id → JSON {attempts, next_at, error}."""
SERVER = f"{PREFIX}:server"
"""Hash: the running server (pid, url, started_at, gateways JSON)."""
SERVER_HEARTBEAT = f"{PREFIX}:server:heartbeat"
"""String with TTL while ``nika bridge serve`` runs."""
ERRORS = f"{PREFIX}:errors"
"""List of JSON refusals and failures not tied to a tenant (newest first, capped)."""
SEEN_TTL_S = 7 * 24 * 3600
"""How long a gateway message id is remembered (gateways retry for hours, not weeks)."""
LAST_KEEP = 20
ERRORS_KEEP = 50


def seen(gateway: str, message_id: str) -> str:
    """String (NX, TTL): this gateway message was already taken."""
    return f"{PREFIX}:seen:{gateway}:{message_id}"


def inbox(tenant_id: str) -> str:
    """Stream of the tenant's messages waiting for its kernel (field ``msg``)."""
    return f"{PREFIX}:inbox:{tenant_id}"


def turn(tenant_id: str) -> str:
    """Hash: the message the tenant's kernel is answering now (read by the agent hooks)."""
    return f"{PREFIX}:turn:{tenant_id}"


def replies(tenant_id: str) -> str:
    """Stream the Stop hook appends the agent's answer to (fields ``message_id``, ``text``)."""
    return f"{PREFIX}:replies:{tenant_id}"


def last(tenant_id: str) -> str:
    """List of the tenant's last bridged messages, in and out (JSON, newest first)."""
    return f"{PREFIX}:last:{tenant_id}"


def tenant_errors(tenant_id: str) -> str:
    """List of the tenant's delivery errors (JSON, newest first)."""
    return f"{PREFIX}:errors:{tenant_id}"
