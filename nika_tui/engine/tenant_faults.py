"""Per-tenant fault isolation of the memory service: a tenant whose store fails is parked.

Before, one tenant's broken shard failed the whole batch, which was retried every 2 s without
end: every other tenant's ingest stopped. Now the service ingests and flushes tenant by tenant
when a batch fails; a tenant that still fails is *parked*:

- its entries stay in the stream, delivered but unacknowledged (nothing is dropped, nothing is
  acknowledged without a flush), and new ones wait behind them;
- an alarm goes to Redis (:mod:`nika_tui.services.tenant_alarms`), shown by the dashboard and
  ``nika doctor``; a shard briefly offline for optimisation (:class:`ShardBusy`) parks without an
  alarm;
- every :data:`PARK_RETRY_S` the parked tenants are released and their pending entries
  replayed; success clears the alarm, failure parks them again;
- a tenant with an alarm is never dead-lettered for "too many deliveries" at start: its entries
  were retried on purpose.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from datetime import datetime

import redis

from nika_tui.errors import ShardBusy, StoreUnavailable
from nika_tui.services.tenant_alarms import (
    TenantAlarm,
    clear_alarms,
    read_alarms,
    write_alarm,
)

log = logging.getLogger("nika.service")

PARK_RETRY_S = 10.0
"""Seconds between two attempts at a parked tenant's pending entries."""


class TenantFaults:
    """Which tenants are parked, their alarms, and when to retry them."""

    def __init__(
        self,
        r: redis.Redis,
        clock: Callable[[], datetime],
        retry_s: float = PARK_RETRY_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._r = r
        self._clock = clock
        self._retry_s = retry_s
        self._monotonic = monotonic
        self._parked: set[str] = set()
        self._alarmed: set[str] = set()
        self._last_release = monotonic()

    def load(self) -> None:
        """Read the alarms a previous run left (their tenants' entries are not dead-lettered)."""
        self._alarmed = {alarm.tenant_id for alarm in read_alarms(self._r)}

    def park(self, tenant_id: str, exc: StoreUnavailable) -> None:
        """Hold ``tenant_id``'s ingest until the next retry; raise its alarm (unless busy)."""
        if tenant_id not in self._parked:
            log.warning("tenant %s parked, its entries stay pending: %s", tenant_id, exc)
        self._parked.add(tenant_id)
        if isinstance(exc, ShardBusy):
            return
        write_alarm(
            self._r,
            TenantAlarm(
                tenant_id=tenant_id,
                reason=exc.message,
                hint=exc.hint,
                kind=type(exc).__name__,
                since=self._clock().isoformat(timespec="seconds"),
            ),
        )
        self._alarmed.add(tenant_id)

    def is_parked(self, tenant_id: str) -> bool:
        """True while ``tenant_id``'s entries are held back."""
        return tenant_id in self._parked

    def has_alarm(self, tenant_id: str) -> bool:
        """True when ``tenant_id`` has an alarm (this run's or a previous one's)."""
        return tenant_id in self._alarmed

    def retry_due(self) -> bool:
        """True when parked tenants should be released for another attempt (and does so)."""
        if not self._parked or self._monotonic() - self._last_release < self._retry_s:
            return False
        self._parked.clear()
        self._last_release = self._monotonic()
        return True

    def recovered(self, tenant_ids: Iterable[str]) -> None:
        """Clear the alarms of tenants whose entries were just stored and acknowledged."""
        cleared = sorted(set(tenant_ids) & self._alarmed)
        if cleared:
            clear_alarms(self._r, cleared)
            self._alarmed.difference_update(cleared)
            log.info("tenant alarms cleared: %s", ", ".join(cleared))
