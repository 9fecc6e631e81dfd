"""Tokens per day: the count the hooks keep from usage records, and what happens at the limit.

The hooks add every billed usage record's tokens to ``tokens_day(tenant, YYYYMMDD)`` (UTC).
The service's :class:`QuotaWatcher` looks once a minute: at 80 % it warns once a day (bus
``quota.warning``); at 100 % it does what ``quotas.on_token_limit`` says, once a day: ``pause``
stops the kernel's agent (SIGSTOP of its process tree) until the next UTC day or ``nika quota
resume``; ``ask`` queues a ``quota.pause`` confirmation (approving it pauses).
"""

from __future__ import annotations

import json
import logging
import signal
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import redis

from nika_tui.domain.tenant import TenantConfig, TokenLimitAction
from nika_tui.errors import NikaError
from nika_tui.paths import Roots
from nika_tui.quota.enforce import signal_tree
from nika_tui.services import redis_keys
from nika_tui.services.bus import open_bus
from nika_tui.services.config_store import list_tenant_ids, load_tenant
from nika_tui.services.confirmation_queue import queue_confirmation

log = logging.getLogger("nika.quota")
WARN_FRACTION = 0.8
PAUSE_KIND = "quota.pause"


def day_of(now: datetime) -> str:
    """``YYYYMMDD`` of ``now`` (UTC is what the hooks use)."""
    return now.strftime("%Y%m%d")


def tokens_used(client: redis.Redis, tenant_id: str, now: datetime) -> int:
    """Tokens billed to the tenant today."""
    raw = client.get(redis_keys.tokens_day(tenant_id, day_of(now)))
    return int(str(raw)) if raw else 0


def token_status(client: redis.Redis, config: TenantConfig, now: datetime) -> dict[str, Any]:
    """Used, limit, percent and state (``ok`` / ``warning`` / ``exceeded``) for today."""
    used = tokens_used(client, config.tenant_id, now)
    limit = config.quotas.tokens_per_day
    state = "exceeded" if used >= limit else "warning" if used >= WARN_FRACTION * limit else "ok"
    paused = client.hget(redis_keys.quota_state(config.tenant_id), "paused_pids")
    return {
        "day": day_of(now),
        "used": used,
        "limit": limit,
        "percent": round(100.0 * used / limit, 2),
        "state": state,
        "on_limit": config.quotas.on_token_limit.value,
        "paused": bool(paused),
    }


def pause_kernel(client: redis.Redis, tenant_id: str, now: datetime,
                 where: Roots | None = None) -> list[int]:  # fmt: skip
    """SIGSTOP the kernel's agent and its children; remembered for :func:`resume_kernel`."""
    raw = client.hget(redis_keys.kernel_state(tenant_id), "pid")
    if not raw:
        return []
    pids = signal_tree(int(str(raw)), signal.SIGSTOP)
    client.hset(redis_keys.quota_state(tenant_id), mapping={
        "paused_pids": json.dumps(pids), "paused_day": day_of(now)})  # fmt: skip
    open_bus(tenant_id, where).append("quota.paused", {"pids": pids}, now=now)
    return pids


def resume_kernel(client: redis.Redis, tenant_id: str, now: datetime,
                  where: Roots | None = None) -> list[int]:  # fmt: skip
    """SIGCONT what :func:`pause_kernel` stopped."""
    raw = client.hget(redis_keys.quota_state(tenant_id), "paused_pids")
    pids: list[int] = json.loads(str(raw)) if raw else []
    resumed: list[int] = []
    for pid in pids:
        resumed += signal_tree(pid, signal.SIGCONT)
    client.hdel(redis_keys.quota_state(tenant_id), "paused_pids", "paused_day")
    if pids:
        open_bus(tenant_id, where).append("quota.resumed", {"pids": sorted(set(resumed))}, now=now)
    return sorted(set(resumed))


def enforce_tokens(
    client: redis.Redis, config: TenantConfig, now: datetime, where: Roots | None = None
) -> list[str]:
    """Warn / pause / ask for one tenant as its usage today requires; return what was done."""
    tenant = config.tenant_id
    key = redis_keys.quota_state(tenant)
    state: dict[str, str] = client.hgetall(key)  # type: ignore[assignment]
    today = day_of(now)
    done: list[str] = []
    if state.get("paused_day") and state["paused_day"] != today:
        resume_kernel(client, tenant, now, where)  # a new day: the quota starts again
        done.append("resumed")
    status = token_status(client, config, now)
    bus = open_bus(tenant, where)
    if status["state"] != "ok" and state.get("warned_day") != today:
        client.hset(key, "warned_day", today)
        bus.append("quota.warning", {k: status[k] for k in ("used", "limit", "percent")}, now=now)
        done.append("warned")
    if status["state"] == "exceeded" and state.get("limited_day") != today:
        client.hset(key, "limited_day", today)
        if config.quotas.on_token_limit is TokenLimitAction.PAUSE:
            pids = pause_kernel(client, tenant, now, where)
            done.append(f"paused:{len(pids)}")
        else:
            queue_confirmation(
                client, tenant, PAUSE_KIND,
                f"token quota reached ({status['used']}/{status['limit']}): pause the kernel?",
                "approve pauses the agent until tomorrow (UTC); reject lets it go on",
                now,
            )  # fmt: skip
            done.append("asked")
    return done


class QuotaWatcher:
    """Runs :func:`enforce_tokens` for every tenant once per ``every_s`` (service loop).

    Only on the service beside the kernels (decision 512): the kernel's pid in Redis is a pid
    of the primary's host, so a joined worker on another host would SIGSTOP an unrelated
    process of its own, and every worker would warn and ask once more.
    """

    def __init__(self, client: redis.Redis, where: Roots | None = None,
                 every_s: float = 60.0,
                 monotonic: Callable[[], float] = time.monotonic,
                 kernels_here: bool = True) -> None:  # fmt: skip
        self.client = client
        self.where = where
        """The roots of the tenants' configs and buses (None: those of ``os.environ``)."""
        self.kernels_here = kernels_here
        """False on a joined worker: the tenants' kernels run on the primary's host."""
        self.every_s = every_s
        self._monotonic = monotonic
        self._next = monotonic()

    def tick(self, now: datetime | None = None) -> list[str]:
        """Check every tenant when due."""
        if not self.kernels_here or self._monotonic() < self._next:
            return []
        now = now or datetime.now(UTC)
        self._next = self._monotonic() + self.every_s
        done: list[str] = []
        for tenant_id in list_tenant_ids(self.where):
            try:
                config = load_tenant(tenant_id, self.where)
                acted = enforce_tokens(self.client, config, now, self.where)
                done += [f"{tenant_id}:{d}" for d in acted]
            except NikaError as exc:
                log.warning("token quota of %s: %s", tenant_id, exc)
        return done
