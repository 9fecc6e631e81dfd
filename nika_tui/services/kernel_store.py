"""Kernel status in Redis: one hash per tenant, a heartbeat with a TTL, pod_ttfl samples.

Keys (see :mod:`nika_tui.services.redis_keys`): ``kernel_state(t)`` hash with ``state``,
``state_source``, ``state_at``, ``pid``, ``cli``, ``session``, ``started_at``, ``last_event``,
``last_event_at``, ``reason``, ``pod_ttfl_s``, ``compact_requested_at``, and one ``agent.{cli}``
field per agent window (JSON: state, source, at, reason; the kernel's ``state`` combines them,
:func:`nika_tui.domain.kernel_state.combine_states`); ``kernel_heartbeat(t)``
string (epoch seconds of the last beat) expiring after the TTL; ``pod_ttfl(t)`` list of samples.

A state decided by a hook stays authoritative for :data:`HOOK_FRESH_S` seconds: the pane
fallback only overrides it after that (hooks know what the agent does; a screen is a guess).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import redis

from nika_tui.domain.kernel_state import (
    COMBINE_ORDER,
    LIVE_STATES,
    KernelState,
    KernelStatus,
    StateSource,
    is_stale,
    state_for_hook_event,
)
from nika_tui.services import redis_keys, wm_store
from nika_tui.services.kernel_agents import (
    AGENT_FIELD_PREFIX,
    HOOK_AGENT_NAMES,
    agent_field,
    agent_statuses,
    agent_value,
)

HEARTBEAT_TTL_S = 30.0
"""A kernel nothing has confirmed alive for this long is shown as stale."""
HOOK_FRESH_S = 120.0
"""How long a hook-decided state wins over the pane fallback."""
POD_TTFL_KEEP = 500
"""Samples kept per tenant (newest first)."""


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def _parse_dt(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _parse_float(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def heartbeat(
    client: redis.Redis, tenant_id: str, now: datetime, ttl_s: float = HEARTBEAT_TTL_S
) -> None:
    """Mark the kernel alive for ``ttl_s`` seconds."""
    client.set(
        redis_keys.kernel_heartbeat(tenant_id),
        f"{now.timestamp():.3f}",
        px=max(1, int(ttl_s * 1000)),
    )


def clear_heartbeat(client: redis.Redis, tenant_id: str) -> None:
    """Drop the heartbeat (the kernel is gone on purpose)."""
    client.delete(redis_keys.kernel_heartbeat(tenant_id))


def read_fields(client: redis.Redis, tenant_id: str) -> dict[str, str]:
    """The raw status hash (empty when the tenant never had a kernel)."""
    return dict(client.hgetall(redis_keys.kernel_state(tenant_id)))  # type: ignore[arg-type]


def start_kernel(
    client: redis.Redis,
    tenant_id: str,
    *,
    cli: str,
    session: str,
    pid: int | None,
    now: datetime,
    heartbeat_ttl_s: float = HEARTBEAT_TTL_S,
    agents: Sequence[str] = (),
) -> None:
    """Record a fresh spawn: state ``starting``, decided by the manager; old fields reset.

    ``agents`` are the kernel's agent windows (default: ``cli`` alone), each ``starting``.
    """
    key = redis_keys.kernel_state(tenant_id)
    old_agents = [f for f in read_fields(client, tenant_id) if f.startswith(AGENT_FIELD_PREFIX)]
    fields: dict[Any, Any] = {
        "state": KernelState.STARTING.value,
        "state_source": StateSource.MANAGER.value,
        "state_at": _iso(now),
        "pid": "" if pid is None else str(pid),
        "cli": cli,
        "session": session,
        "started_at": _iso(now),
        "last_event": "spawn",
        "last_event_at": _iso(now),
        "reason": "",
        "pod_ttfl_s": "",
        # wall clock, so that another process (a poller) can compute pod_ttfl
        "spawned_epoch": f"{now.timestamp():.4f}",
    }
    for agent in agents or [cli]:
        fields[agent_field(agent)] = agent_value(KernelState.STARTING, StateSource.MANAGER, now)
    pipe = client.pipeline(transaction=True)
    pipe.hdel(key, "compact_requested_at", *old_agents)
    pipe.hset(key, mapping=fields)
    pipe.set(
        redis_keys.kernel_heartbeat(tenant_id),
        f"{now.timestamp():.3f}",
        px=max(1, int(heartbeat_ttl_s * 1000)),
    )
    pipe.execute()


def set_state(
    client: redis.Redis,
    tenant_id: str,
    state: KernelState,
    source: StateSource,
    now: datetime,
    *,
    event: str | None = None,
    reason: str | None = None,
    extra: Mapping[str, str] | None = None,
) -> None:
    """Write a state and the source that decided it (plus the event and reason when given)."""
    fields: dict[Any, Any] = {
        "state": state.value,
        "state_source": source.value,
        "state_at": _iso(now),
    }
    if event is not None:
        fields["last_event"] = event
        fields["last_event_at"] = _iso(now)
    if reason is not None:
        fields["reason"] = reason
    if extra:
        fields.update(extra)
    client.hset(redis_keys.kernel_state(tenant_id), mapping=fields)


def set_agent_state(
    client: redis.Redis,
    tenant_id: str,
    agent: str,
    state: KernelState,
    source: StateSource,
    now: datetime,
    *,
    event: str | None = None,
    reason: str = "",
) -> KernelState:
    """Write one agent window's state, then the kernel's combined state; return the latter.

    The combined state takes its source (and reason) from the first agent in that state.
    """
    client.hset(
        redis_keys.kernel_state(tenant_id),
        agent_field(agent),
        agent_value(state, source, now, reason),
    )
    fields = read_fields(client, tenant_id)
    winner = min(agent_statuses(fields), key=lambda a: COMBINE_ORDER.index(a.state))
    changed = (fields.get("state"), fields.get("state_source")) != (winner.state, winner.source)
    if changed or event is not None:  # an unchanged state keeps its time (``state_at``)
        set_state(
            client, tenant_id, winner.state, winner.source, now, event=event,
            reason=winner.reason if changed else None,
        )  # fmt: skip
    return winner.state


def end_kernel(
    client: redis.Redis,
    tenant_id: str,
    state: KernelState,
    now: datetime,
    *,
    event: str,
    reason: str,
) -> None:
    """The whole kernel is gone (stopped, dead, vanished): it and its live agents take ``state``."""
    fields = read_fields(client, tenant_id)
    for agent in agent_statuses(fields):
        if agent.state in LIVE_STATES:
            value = agent_value(state, StateSource.MANAGER, now, reason)
            client.hset(redis_keys.kernel_state(tenant_id), agent_field(agent.agent), value)
    set_state(client, tenant_id, state, StateSource.MANAGER, now, event=event, reason=reason)
    clear_heartbeat(client, tenant_id)


def hook_state_is_fresh(
    fields: Mapping[str, str], now: datetime, window_s: float = HOOK_FRESH_S
) -> bool:
    """True while a hook-decided state should win over the pane fallback."""
    if fields.get("state_source") != StateSource.HOOK.value:
        return False
    at = _parse_dt(fields.get("state_at"))
    return at is not None and (now - at).total_seconds() < window_s


def record_compaction(
    client: redis.Redis, tenant_id: str, now: datetime, trigger: str, fill: float | None = None
) -> None:
    """Append one compaction event to the tenant's ``compactions`` stream (via ``wm_store``).

    ``fill`` defaults to the last fill reading of the tenant's working memory.
    """
    if fill is None:
        raw = client.hget(redis_keys.working_memory(tenant_id), "fill_percent")
        fill = _parse_float(str(raw)) if raw is not None else None
    wm_store.record_compaction(client, tenant_id, trigger or "unknown", fill or 0.0, now)


def record_hook_event(
    client: redis.Redis,
    tenant_id: str,
    event: str,
    now: datetime,
    payload: Mapping[str, Any] | None = None,
    heartbeat_ttl_s: float = HEARTBEAT_TTL_S,
    agent: str | None = None,
) -> KernelState | None:
    """Apply one agent hook event to the kernel's status (used by ``nika hook``).

    UserPromptSubmit → working, Stop → idle, Notification (permission or idle prompt) →
    waiting-input, SessionStart → idle (working after an automatic compaction), SessionEnd →
    exited. A compaction is recorded by the hook when it happened (:func:`record_compaction`,
    called once the CLI confirms it; PreCompact alone may be refused). Any event refreshes the
    heartbeat (an agent that runs hooks is alive) except SessionEnd, which clears it.

    Args:
        client: a decoded Redis client.
        tenant_id: the kernel's tenant.
        event: the hook event name.
        now: the event time.
        payload: the hook's JSON payload, if any.
        heartbeat_ttl_s: heartbeat lifetime.
        agent: which CLI's hook fired (``nika hook`` names it: claude, codex, …); its window
            takes the state and the kernel shows the combination of its agents. A hook of
            a CLI that has no window of its own (a script in a shell tenant) counts for the
            first window.

    Returns:
        The kernel's state after the event, or None when the event changes no state.
    """
    payload = payload or {}
    state = state_for_hook_event(event, payload)
    key = redis_keys.kernel_state(tenant_id)
    if state is None:
        client.hset(key, mapping={"last_event": event, "last_event_at": _iso(now)})
    else:
        fields = read_fields(client, tenant_id)
        window = HOOK_AGENT_NAMES.get(agent or "", agent or "")
        if agent_field(window) not in fields:
            window = fields.get("cli", "")
        if window:
            state = set_agent_state(
                client, tenant_id, window, state, StateSource.HOOK, now, event=event
            )
        else:  # no kernel record yet: the hook's word is all there is
            set_state(client, tenant_id, state, StateSource.HOOK, now, event=event)
    if state is KernelState.EXITED:
        clear_heartbeat(client, tenant_id)
    else:
        heartbeat(client, tenant_id, now, heartbeat_ttl_s)
    return state


def record_pod_ttfl(client: redis.Redis, tenant_id: str, seconds: float) -> None:
    """Record one pod_ttfl sample (newest first) and the last value on the status hash."""
    pipe = client.pipeline(transaction=True)
    pipe.lpush(redis_keys.pod_ttfl(tenant_id), f"{seconds:.4f}")
    pipe.ltrim(redis_keys.pod_ttfl(tenant_id), 0, POD_TTFL_KEEP - 1)
    pipe.hset(redis_keys.kernel_state(tenant_id), "pod_ttfl_s", f"{seconds:.4f}")
    pipe.execute()


def pod_ttfl_samples(client: redis.Redis, tenant_id: str) -> list[float]:
    """Recorded pod_ttfl samples, newest first."""
    raw: list[str] = client.lrange(redis_keys.pod_ttfl(tenant_id), 0, -1)  # type: ignore[assignment]
    return [float(v) for v in raw]


def read_status(client: redis.Redis, tenant_id: str, now: datetime) -> KernelStatus | None:
    """The tenant's kernel status, or None when it never had one."""
    fields = read_fields(client, tenant_id)
    if not fields.get("state"):
        return None
    beat = client.get(redis_keys.kernel_heartbeat(tenant_id))
    beat_at = _parse_float(str(beat)) if beat is not None else None
    age = None if beat_at is None else max(0.0, now.timestamp() - beat_at)
    state = KernelState(fields["state"])
    pid = fields.get("pid", "")
    return KernelStatus(
        tenant_id=tenant_id,
        state=state,
        source=StateSource(fields.get("state_source") or StateSource.MANAGER.value),
        pid=int(pid) if pid.isdigit() else None,
        cli=fields.get("cli", ""),
        session=fields.get("session", ""),
        started_at=_parse_dt(fields.get("started_at")),
        state_at=_parse_dt(fields.get("state_at")),
        last_event=fields.get("last_event", ""),
        last_event_at=_parse_dt(fields.get("last_event_at")),
        reason=fields.get("reason", ""),
        heartbeat_age_s=age,
        stale=is_stale(state, beat is not None),
        pod_ttfl_s=_parse_float(fields.get("pod_ttfl_s")),
        agents=agent_statuses(fields),
    )


def list_statuses(
    client: redis.Redis, tenant_ids: Iterable[str], now: datetime | None = None
) -> list[KernelStatus]:
    """Statuses of the given tenants that have a kernel record, in the given order."""
    moment = now or datetime.now(UTC)
    out: list[KernelStatus] = []
    for tenant_id in tenant_ids:
        status = read_status(client, tenant_id, moment)
        if status is not None:
            out.append(status)
    return out


def _compact_field(agent: str | None) -> str:
    # Each agent window of a kernel has its own context, so its own cooldown.
    return f"compact_requested_at:{agent}" if agent else "compact_requested_at"


def mark_compact_requested(client: redis.Redis, t: str, now: datetime, agent: str = "") -> None:
    """Remember when the compaction policy last acted on ``agent`` (its cooldown reads it)."""
    client.hset(redis_keys.kernel_state(t), _compact_field(agent), _iso(now))


def compact_requested_at(client: redis.Redis, t: str, agent: str = "") -> datetime | None:
    """When the compaction policy last acted on ``agent``'s window, if ever."""
    value = client.hget(redis_keys.kernel_state(t), _compact_field(agent))
    return _parse_dt(str(value)) if value else None


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
