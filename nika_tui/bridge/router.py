"""The bridge router: sender → tenant, replays, rate limits, and the threads that deliver.

:meth:`Router.take` decides what happens to one verified message (seed 1, « Bridge → tenant
routing »: ``lookup tenant_id(sender_id)`` then route to the tenant's kernel):

- a replay of a message id already taken → nothing (the first one is being answered);
- a sender linked to no tenant → the refusal (or the operator's onboarding message) goes
  back through the gateway; nothing reaches any kernel;
- a sender over its rate → a polite "slow down" answer; nothing reaches the kernel;
- otherwise → the tenant's durable inbox, consumed in order by that tenant's worker.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from enum import StrEnum

import redis

from nika_tui.bridge.delivery import Outbox, accept, enqueue_reply, mark_seen
from nika_tui.bridge.kernel_delivery import TenantWorker
from nika_tui.bridge.records import record_error
from nika_tui.domain.bridge import BridgeConfig, Gateway, InboundMessage, TokenBucket
from nika_tui.engine.kernels.manager import KernelManager
from nika_tui.services import bridge_keys as keys
from nika_tui.settings import Settings

NOTICE_EVERY_S = 60.0
"""Least seconds between two "slow down" answers to one sender."""


class Outcome(StrEnum):
    QUEUED = "queued"
    DUPLICATE = "duplicate"
    UNKNOWN_SENDER = "unknown-sender"
    RATE_LIMITED = "rate-limited"


class Router:
    """Routes verified messages; owns the per-tenant workers and the outbox thread.

    ``settings``: the bridge's (built once by ``nika bridge serve``); ``child_env``: the
    environment the kernels it starts inherit (the bridge's, its secrets removed).
    """

    def __init__(
        self,
        config: BridgeConfig,
        client: redis.Redis,
        settings: Settings,
        child_env: Mapping[str, str],
        outbox: Outbox,
        *,
        kernels_factory: Callable[[], KernelManager] | None = None,
        clock: Callable[[], datetime] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.client = client
        self.settings = settings
        self.child_env = child_env
        self.roots = settings.roots
        """Where the tenants' buses are."""
        self.outbox = outbox
        self.kernels_factory = kernels_factory or (
            lambda: KernelManager(settings, child_env=child_env, redis_client=client)
        )
        self.clock = clock or (lambda: datetime.now(UTC))
        self.monotonic = monotonic
        self.buckets: dict[tuple[Gateway, str], TokenBucket] = {}
        self.noticed: dict[tuple[Gateway, str], float] = {}
        self.workers: dict[str, tuple[TenantWorker, threading.Thread]] = {}
        self._lock = threading.Lock()

    def tenant_of(self, message: InboundMessage) -> str | None:
        """The tenant a message's sender is linked to (Teams: by user id or AAD object id)."""
        found = self.config.tenant_of(message.gateway, message.sender)
        alt = message.reply_to.get("aad_object_id") or message.reply_to.get("email")
        if found is None and alt:
            found = self.config.tenant_of(message.gateway, alt)
        return found

    def take(self, message: InboundMessage) -> tuple[Outcome, str | None]:
        """Route one message; the outcome and the tenant (None when unknown)."""
        now = self.clock()
        if self.client.exists(keys.seen(message.gateway.value, message.message_id)):
            return Outcome.DUPLICATE, self.tenant_of(message)
        tenant = self.tenant_of(message)
        if tenant is None:
            if not mark_seen(self.client, message, Outcome.UNKNOWN_SENDER.value):
                return Outcome.DUPLICATE, None
            text = self.config.onboarding_message or self.config.refusal_message
            enqueue_reply(self.client, None, "refusal", message, text)
            record_error(self.client, self.roots, None, message.gateway.value,
                         f"unknown sender {message.sender}: refused", now)  # fmt: skip
            self.outbox.wake.set()
            return Outcome.UNKNOWN_SENDER, None
        moment = self.monotonic()
        if not self._bucket(message).take(moment):
            if not mark_seen(self.client, message, Outcome.RATE_LIMITED.value):
                return Outcome.DUPLICATE, tenant
            # One "slow down" a minute per sender: a flood must not be answered by a flood.
            key = (message.gateway, message.sender)
            if moment - self.noticed.get(key, -NOTICE_EVERY_S) >= NOTICE_EVERY_S:
                self.noticed[key] = moment
                enqueue_reply(self.client, tenant, "rate-limited", message,
                              self.config.rate_limited_message)  # fmt: skip
                self.outbox.wake.set()
            reason = f"sender {message.sender} over its rate: message refused"
            record_error(self.client, self.roots, tenant, message.gateway.value, reason, now)
            return Outcome.RATE_LIMITED, tenant
        if accept(self.client, message, tenant) is None:
            return Outcome.DUPLICATE, tenant
        self.ensure_worker(tenant)
        return Outcome.QUEUED, tenant

    def _bucket(self, message: InboundMessage) -> TokenBucket:
        key = (message.gateway, message.sender)
        with self._lock:
            bucket = self.buckets.get(key)
            if bucket is None:
                limit = self.config.rate_limit
                bucket = self.buckets[key] = TokenBucket(limit.per_minute, limit.burst)
            return bucket

    def ensure_worker(self, tenant_id: str) -> None:
        """Start the tenant's worker thread unless it runs."""
        with self._lock:
            running = self.workers.get(tenant_id)
            if running is not None and running[1].is_alive():
                return
            worker = TenantWorker(
                tenant_id, self.client, self.kernels_factory(), self.child_env,
                spawn=self.config.spawn_kernels, reply_timeout_s=self.config.reply_timeout_s,
                headless=tenant_id in self.config.headless_tenants,
                on_reply=self.outbox.wake.set, clock=self.clock,
            )  # fmt: skip
            thread = threading.Thread(target=worker.run, name=f"bridge-{tenant_id}", daemon=True)
            self.workers[tenant_id] = (worker, thread)
            thread.start()

    def resume_pending(self) -> list[str]:
        """Start workers for every tenant whose inbox has entries (left by a stop or crash)."""
        tenants = []
        for key in self.client.scan_iter(match=keys.inbox("*"), count=500):
            tenant = str(key).rsplit(":", 1)[-1]
            if self.client.xlen(str(key)):
                self.ensure_worker(tenant)
                tenants.append(tenant)
        return sorted(tenants)

    def stop(self) -> None:
        """Ask every worker to stop and wait a little for them."""
        for worker, _ in self.workers.values():
            worker.stop.set()
        for _, thread in self.workers.values():
            thread.join(timeout=3)
