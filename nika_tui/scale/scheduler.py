"""Strategy B inside the memory service: sample once a minute, plan when saturated or calm.

:meth:`ScaleScheduler.tick` is called on every loop iteration of every worker; only the scale
leader (``scale/leader.py``, one per Redis) samples and plans, at most once per ``every_s``.
Everything a plan decision depends on is in the shared Redis, so a leader that takes over from
a dead one goes on where it stopped: the samples, the plans (a tenant with a plan still pending
or applying gets no second one) and the time of the last scale-out (no other one for
``cooldown_s``: the new worker needs time to take load). A failure is logged and never stops
the single writer.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

import redis

from nika_tui.errors import NikaError
from nika_tui.scale.actions import AdapterFactory, advance_drains, default_factory
from nika_tui.scale.indicators import Sample, Thresholds, calm, evaluate
from nika_tui.scale.leader import ScaleLeader
from nika_tui.scale.planner import PlanKind, make_plan
from nika_tui.scale.policy import act, open_plans
from nika_tui.scale.sampler import HostSampler, load_samples, store_sample
from nika_tui.scale.state import ScaleState
from nika_tui.services.bus import open_bus
from nika_tui.services.config_store import list_tenant_ids, load_tenant
from nika_tui.settings import Settings

log = logging.getLogger("nika.scale")

DRAIN_CHECK_S = 1.0
"""How often the leader looks at a decommission's drain (a Redis read, no wait)."""


class ScaleScheduler:
    """Samples the host and runs the planner from the service loop."""

    def __init__(
        self,
        client: redis.Redis,
        settings: Settings,
        every_s: float | None = None,
        cooldown_s: float = 900.0,
        monotonic: Callable[[], float] = time.monotonic,
        factory: AdapterFactory | None = None,
        worker_id: str = "memory-service",
        lease_ttl_s: float = 15.0,
    ) -> None:
        """Args:
        settings: the entry's settings.
        every_s: seconds between two samples; ``None``: ``NIKA_SCALE_EVERY_S`` (60).
        factory: the providers' adapters (None: keys read from ``os.environ``).
        worker_id: this worker's id, named in the leader lease.
        lease_ttl_s: how long a dead leader keeps the leadership.
        """
        self.client = client
        self.settings = settings
        self.roots = self.settings.roots
        """Where the tenants' configs are, resolved once."""
        self.every_s = self.settings.scale_every_s if every_s is None else every_s
        self.cooldown_s = cooldown_s
        self._monotonic = monotonic
        self._next = monotonic()
        self.leader = ScaleLeader(client, worker_id, lease_ttl_s, monotonic)
        self._leading = False
        self._next_drain_check = monotonic()
        self.sampler = HostSampler(client, self.roots)
        self.state = ScaleState(self.roots, client)
        self.factory = factory or default_factory()

    def tick(self, now: datetime | None = None) -> list[str]:
        """Sample and plan when due and leading; return what was done
        (``scale_out:acme:confirmation``…)."""
        mono = self._monotonic()
        try:
            leading = self.leader.lead()
        except redis.RedisError as exc:
            log.warning("scale leadership check failed: %s", exc)
            return []
        if leading != self._leading:
            self._leading = leading
            log.info("worker %s %s strategy B", self.leader.worker_id,
                     "now leads" if leading else "no longer leads")  # fmt: skip
        if not leading:
            return []
        at = now or datetime.now(UTC)
        done = self._advance_drains(mono, at)
        if mono < self._next:
            return done
        self._next = mono + self.every_s
        try:
            store_sample(self.client, self.sampler.sample(at))
        except (OSError, NikaError) as exc:
            log.warning("scale sample failed: %s", exc)
            return []
        samples = load_samples(self.client)
        for tenant_id in list_tenant_ids(self.roots):
            try:
                done += self._plan(tenant_id, samples, at)
            except NikaError as exc:
                log.warning("scale planning for %s failed: %s", tenant_id, exc)
        return done

    def _advance_drains(self, mono: float, at: datetime) -> list[str]:
        """Finish the decommissions whose drain is over: one look, never a wait (decision 456;
        a new leader finishes a dead one's, the plan and its deadline being in Redis)."""
        if mono < self._next_drain_check:
            return []
        self._next_drain_check = mono + DRAIN_CHECK_S
        try:
            finished = advance_drains(
                self.state, lambda t: load_tenant(t, self.roots), self.factory, at
            )
        except (NikaError, redis.RedisError) as exc:
            log.warning("scale drain check failed: %s", exc)
            return []
        done: list[str] = []
        for record in finished:
            tenant_id, status = str(record["tenant_id"]), str(record["status"])
            event = "scale.applied" if status == "applied" else "scale.failed"
            body = {"plan_id": record["plan_id"], "error": record.get("error", "")}
            open_bus(tenant_id, self.roots).append(event, body, now=at)
            if status != "applied":
                log.warning("decommission %s failed: %s", record["plan_id"], record.get("error"))
            done.append(f"decommission:{tenant_id}:{status}")
        return done

    def close(self) -> None:
        """Give the leadership up (a stopping worker): another one leads at once."""
        try:
            self.leader.resign()
        except redis.RedisError as exc:
            log.warning("could not resign the scale leadership (it expires): %s", exc)

    def _cooling(self, at: datetime) -> bool:
        """True within ``cooldown_s`` of the last scale-out any leader planned (in Redis)."""
        last = self.state.snapshot().get("last_scale_out")
        return bool(last) and (at - datetime.fromisoformat(str(last))).total_seconds() < (
            self.cooldown_s
        )

    def _plan(self, tenant_id: str, samples: list[Sample], at: datetime) -> list[str]:
        config = load_tenant(tenant_id, self.roots)
        if open_plans(self.state, tenant_id):
            return []
        t = Thresholds(
            queue_depth=config.scale.queue_threshold, calm_s=60.0 * config.scale.calm_minutes
        )
        readings = evaluate(samples, at, t)
        plan = make_plan(
            config,
            readings,
            calm(samples, at, t),
            self.state.workers(tenant_id),
            at,
            uuid.uuid4().hex,
        )
        if plan.kind in (PlanKind.NONE, PlanKind.UNAVAILABLE):
            return []
        if plan.kind is PlanKind.SCALE_OUT:
            if self._cooling(at):
                return []
            # Recorded before acting: a leader that dies mid-apply leaves the cooldown behind.
            with self.state.transaction() as data:
                data["last_scale_out"] = at.isoformat()
        result = act(plan, config, self.state, self.factory, self.client, at, self.settings)
        return [f"{plan.kind.value}:{tenant_id}:{result['action']}"]
