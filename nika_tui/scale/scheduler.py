"""Strategy B inside the memory service: sample once a minute, plan when saturated or calm.

:meth:`ScaleScheduler.tick` is called on every loop iteration and does something at most once per
``every_s``. A tenant with a plan still pending or applying gets no second one; after a worker
is added, no other scale-out is planned for ``cooldown_s`` (the new worker needs time to take
load). A failure is logged and never stops the single writer.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

import redis

from nika_tui.errors import NikaError
from nika_tui.paths import roots
from nika_tui.scale.actions import AdapterFactory, default_factory
from nika_tui.scale.indicators import Sample, Thresholds, calm, evaluate
from nika_tui.scale.planner import PlanKind, make_plan
from nika_tui.scale.policy import act, open_plans
from nika_tui.scale.sampler import HostSampler, load_samples, store_sample
from nika_tui.scale.state import ScaleState
from nika_tui.services.config_store import list_tenant_ids, load_tenant

log = logging.getLogger("nika.scale")


class ScaleScheduler:
    """Samples the host and runs the planner from the service loop."""

    def __init__(
        self,
        client: redis.Redis,
        env: Mapping[str, str] | None = None,
        every_s: float = 60.0,
        cooldown_s: float = 900.0,
        monotonic: Callable[[], float] = time.monotonic,
        factory: AdapterFactory | None = None,
    ) -> None:
        self.client = client
        self.env = env
        self.roots = roots(env)
        """Where the tenants' configs and the scale state are, resolved once."""
        self.every_s = every_s
        self.cooldown_s = cooldown_s
        self._monotonic = monotonic
        self._next = monotonic()
        self._last_scale_out = -cooldown_s
        self.sampler = HostSampler(client, self.roots.data)
        self.state = ScaleState(self.roots)
        self.factory = factory or default_factory(env)

    def tick(self, now: datetime | None = None) -> list[str]:
        """Sample and plan when due; return what was done (``scale_out:acme:confirmation``…)."""
        mono = self._monotonic()
        if mono < self._next:
            return []
        self._next = mono + self.every_s
        at = now or datetime.now(UTC)
        try:
            store_sample(self.client, self.sampler.sample(at))
        except (OSError, NikaError) as exc:
            log.warning("scale sample failed: %s", exc)
            return []
        samples = load_samples(self.client)
        done: list[str] = []
        for tenant_id in list_tenant_ids(self.roots):
            try:
                done += self._plan(tenant_id, samples, at, mono)
            except NikaError as exc:
                log.warning("scale planning for %s failed: %s", tenant_id, exc)
        return done

    def _plan(self, tenant_id: str, samples: list[Sample], at: datetime, mono: float) -> list[str]:
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
        if plan.kind is PlanKind.SCALE_OUT and mono - self._last_scale_out < self.cooldown_s:
            return []
        if plan.kind in (PlanKind.NONE, PlanKind.UNAVAILABLE):
            return []
        result = act(plan, config, self.state, self.factory, self.client, at, self.env)
        if plan.kind is PlanKind.SCALE_OUT:
            self._last_scale_out = mono
        return [f"{plan.kind.value}:{tenant_id}:{result['action']}"]
