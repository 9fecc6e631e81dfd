"""Decision 331: a tuning's decision is frozen until the labels change — the service does not
re-tune a tenant on the same labels however many days pass; a new label lifts the freeze."""

from __future__ import annotations

from datetime import timedelta

from nika_tui.domain.tenant import AutoMode
from nika_tui.engine.context import EngineContext
from nika_tui.services.recall_params import last_tuning
from nika_tui.tuning.relevance import mark
from nika_tui.tuning.scheduler import TuneScheduler
from tests.engine.test_tuning import _mode, _tenant


def test_a_decision_stays_frozen_until_a_new_label(debt_ctx: EngineContext) -> None:
    labels = _tenant(debt_ctx, relevant_cos=0.80)  # the defaults already score 1.0: kept
    for j in labels:
        mark("acme", j.query, "2026-03-01T00:00:00+00:00", useful=sorted(j.useful),
             expect_none=j.expect_none)  # fmt: skip
    _mode(AutoMode.AUTONOMOUS)
    ticks = {"t": 0.0}
    scheduler = TuneScheduler(debt_ctx, check_every_s=60, monotonic=lambda: ticks["t"])
    ticks["t"] += 61
    assert scheduler.tick() == ["tune:acme:kept"]
    first = last_tuning(debt_ctx.redis, "acme")
    for _ in range(5):  # five days, five new sampler seeds, the same labels
        debt_ctx.clock.now += timedelta(days=1)  # type: ignore[attr-defined]
        ticks["t"] += 61
        assert scheduler.tick() == [], "frozen: no new label"
    assert last_tuning(debt_ctx.redis, "acme") == first
    mark("acme", "question 1", "2026-03-02T00:00:00+00:00", useful=sorted(labels[1].useful))
    ticks["t"] += 61
    assert scheduler.tick() == ["tune:acme:kept"], "a new label lifts the freeze"
