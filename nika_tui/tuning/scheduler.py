"""Periodic recall tuning by the memory service (issue 20), as ``auto_actions.tune`` allows.

The service calls :meth:`TuneScheduler.tick` every loop; at most once per ``check_every_s`` it
looks at each tenant this worker holds and runs :func:`~nika_tui.tuning.tuner.tune` when:

- the tenant's ``auto_actions.tune`` is not ``off`` (off: only `nika tune recall` by hand);
- its relevance set has at least :data:`~nika_tui.tuning.tuner.MIN_QUERIES` queries, and
  changed since the last tuning (new marks from people or from hits agents used);
- the last tuning is older than ``NIKA_TUNE_INTERVAL_S`` (default a day).

What the tuning then does with a gain past 2× the noise is the tuner's: autonomous adopts,
escalate queues one ``tune.adopt`` confirmation. The seed varies by day, so a tenant whose
labels did not change is not re-tuned on the same draw. A tuning holds the loop for a few
seconds (40 trials on cached candidates); once a day per tenant at most.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from nika_tui.domain.tenant import AutoMode
from nika_tui.engine.context import EngineContext
from nika_tui.errors import NikaError
from nika_tui.services import redis_keys
from nika_tui.services.config_store import list_tenant_ids
from nika_tui.services.recall_params import last_tuning
from nika_tui.tuning.relevance import load_set
from nika_tui.tuning.tuner import MIN_QUERIES, tune

log = logging.getLogger("nika.tuning")


def _size_key(tenant_id: str) -> str:
    """The relevance set's size when the tenant was last tuned by the scheduler."""
    return redis_keys.tenant_key(tenant_id, "tune_labels_size")


class TuneScheduler:
    """Runs due recall tunings from the service loop."""

    def __init__(
        self,
        ctx: EngineContext,
        check_every_s: float = 600.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ctx = ctx
        self.check_every_s = check_every_s
        self.interval_s = ctx.settings.tune_interval_s
        self._monotonic = monotonic
        self._next = monotonic() + check_every_s

    def tick(self, owns: Callable[[str], bool] | None = None) -> list[str]:
        """Tune the tenants that are due (``owns``: those this worker holds); return them."""
        now = self._monotonic()
        if now < self._next:
            return []
        self._next = now + self.check_every_s
        done: list[str] = []
        for tenant_id in list_tenant_ids(self.ctx.settings.roots):
            if owns is not None and not owns(tenant_id):
                continue
            try:
                if self.due(tenant_id):
                    size = self._labels(tenant_id).stat().st_size
                    summary = tune(self.ctx, tenant_id, seed=self._seed())
                    self.ctx.redis.set(_size_key(tenant_id), size)
                    done.append(f"tune:{tenant_id}:{summary['action']}")
            except NikaError as exc:
                log.warning("recall tuning of %s failed: %s", tenant_id, exc)
        return done

    def due(self, tenant_id: str) -> bool:
        """True when the tenant allows tuning, has enough new labels and was not tuned lately."""
        if self.ctx.tenant(tenant_id).auto_actions.tune is AutoMode.OFF:
            return False
        labels = self._labels(tenant_id)
        if not labels.exists() or len(load_set(tenant_id, self.ctx.settings.roots)) < MIN_QUERIES:
            return False
        # The set only grows (marks are appended): a new size is a new label.
        if str(self.ctx.redis.get(_size_key(tenant_id))) == str(labels.stat().st_size):
            return False
        last = last_tuning(self.ctx.redis, tenant_id)
        if last is None:
            return True
        try:
            at = datetime.fromisoformat(str(last.get("at"))).timestamp()
        except ValueError:
            return True
        return self.ctx.clock().timestamp() - at >= self.interval_s

    def _labels(self, tenant_id: str) -> Path:
        return self.ctx.settings.roots.tenant_data_dir(tenant_id) / "tuning" / "relevance.jsonl"

    def _seed(self) -> int:
        return int(self.ctx.clock().timestamp() // 86400)
