"""The audit's strategy A suggestions → a fresh start, as auto_actions.compress allows."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from nika_tui.domain.memory import Layer
from nika_tui.domain.protocol_requests import AuditRequest
from nika_tui.domain.tenant import AutoMode
from nika_tui.engine.context import EngineContext
from nika_tui.engine.debt.run import run_audit
from nika_tui.engine.kernels.confirmations import list_confirmations
from nika_tui.engine.reset import read_journal
from nika_tui.engine.reset_trigger import KIND, decide_reset
from nika_tui.services import redis_keys
from nika_tui.services.config_store import load_tenant, save_tenant
from tests.engine.strategy_a_seed import seed_history
from tests.helpers import retry_until
from tests.plugins.debt import FixedClock
from tests.plugins.memory import RunningService

pytestmark = pytest.mark.embedder
TENANT = "acme"
SUGGESTED = [{"indicator": "judge_disagreement", "strategies": ["A"], "available": ["A"]}]


def _mode(mode: AutoMode) -> None:
    config = load_tenant(TENANT)
    actions = config.auto_actions.model_copy(update={"compress": mode})
    save_tenant(config.model_copy(update={"knowledge_repo": "/srv/k", "auto_actions": actions}))


def test_escalate_queues_one_confirmation(engine_ctx: EngineContext, make_tenant) -> None:  # type: ignore[no-untyped-def]
    make_tenant(TENANT)
    _mode(AutoMode.ESCALATE)
    first = decide_reset(engine_ctx, TENANT, SUGGESTED)
    again = decide_reset(engine_ctx, TENANT, SUGGESTED)
    assert first is not None and again is not None
    assert first["decision"] == "confirm" and first["confirmation_id"] == again["confirmation_id"]
    pending = list_confirmations(engine_ctx.redis, TENANT)
    assert [c["kind"] for c in pending] == [KIND]


def test_off_reports_and_no_suggestion_does_nothing(engine_ctx: EngineContext, make_tenant) -> None:  # type: ignore[no-untyped-def]
    make_tenant(TENANT)
    _mode(AutoMode.OFF)
    entry = decide_reset(engine_ctx, TENANT, SUGGESTED)
    assert entry is not None and entry["decision"] == "report"
    assert decide_reset(engine_ctx, TENANT, [{"indicator": "x", "available": ["B"]}]) is None
    assert list_confirmations(engine_ctx.redis, TENANT) == []


# --- autonomous: a real audit feeds it, and it is throttled ------------------------------------
def _autonomous_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    config = load_tenant(TENANT)
    actions = config.auto_actions.model_copy(update={"compress": AutoMode.AUTONOMOUS})
    save_tenant(config.model_copy(update={"knowledge_repo": str(repo), "auto_actions": actions}))
    return repo


def _leak(ctx: EngineContext, memory_id: str) -> None:
    """Ten recalls from another project served a memory of ours: cross_project_leakage alerts."""
    for _ in range(10):
        ctx.redis.xadd(
            redis_keys.query_log(TENANT),
            {"at": ctx.clock().isoformat(), "query": "q", "session_id": "s",
             "project_id": "elsewhere", "filters": "{}", "ids": json.dumps([memory_id]),
             "cosines": "[0.9]"},
        )  # fmt: skip


def _a_live_id(ctx: EngineContext) -> str:
    point = next(
        p for p in ctx.vectors.scroll(TENANT, Layer.SEMANTIC) if p.payload.get("project_id")
    )
    return str(point.id)


def test_a_real_audit_resets_once_then_escalates_while_the_trigger_stays(
    engine_ctx: EngineContext,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    make_tenant(TENANT)
    _autonomous_repo(tmp_path)
    seeded = seed_history(engine_ctx, TENANT)
    _leak(engine_ctx, seeded.ids["gamma"])
    first = next(a for a in run_audit(engine_ctx, TENANT, seed=1).actions if a["action"] == KIND)
    generation = engine_ctx.vectors.generation(TENANT)  # type: ignore[attr-defined]
    assert first["decision"] == "apply" and "cross_project_leakage" in first["metrics"]
    assert generation is not None and first["result"]["generation"] == generation
    # The fresh store leaks the same way: the reset did not help, so a person decides next.
    _leak(engine_ctx, _a_live_id(engine_ctx))
    for _ in range(2):
        again = next(
            a for a in run_audit(engine_ctx, TENANT, seed=1).actions if a["action"] == KIND
        )
        assert again["decision"] == "confirm" and "left cross_project_leakage" in again["escalated"]
    assert engine_ctx.vectors.generation(TENANT) == generation  # type: ignore[attr-defined]
    kinds = [c["kind"] for c in list_confirmations(engine_ctx.redis, TENANT)]
    assert kinds.count(KIND) == 1


def test_cooldown_then_cleared_when_no_trigger(
    engine_ctx: EngineContext,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    make_tenant(TENANT)
    repo = _autonomous_repo(tmp_path)
    seed_history(engine_ctx, TENANT)
    clock = FixedClock(datetime(2026, 12, 3, 12, 0, tzinfo=UTC))
    engine_ctx.clock = clock
    first = decide_reset(engine_ctx, TENANT, SUGGESTED)
    generation = engine_ctx.vectors.generation(TENANT)  # type: ignore[attr-defined]
    assert first is not None and first["decision"] == "apply" and generation is not None
    other = [{"indicator": "disk_usage_qdrant", "available": ["A"]}]
    clock.now += timedelta(days=6)
    held = decide_reset(engine_ctx, TENANT, other)
    assert held is not None and held["decision"] == "report"
    assert held["skipped"].startswith("cooldown: one autonomous reset per 7 days")
    assert engine_ctx.vectors.generation(TENANT) == generation  # type: ignore[attr-defined]
    # Past the cooldown a new trigger may reset again; a failed reset goes to a person.
    shutil.rmtree(repo / ".git")
    clock.now += timedelta(days=2)
    tried = decide_reset(engine_ctx, TENANT, other)
    assert tried is not None and tried["decision"] == "apply"
    assert tried["result"]["done"] is False and "not a git work tree" in tried["result"]["error"]
    after = decide_reset(engine_ctx, TENANT, other)
    assert after is not None and after["decision"] == "confirm" and "failed" in after["escalated"]
    # An audit with no strategy A suggestion clears the record: the next trigger may reset.
    assert decide_reset(engine_ctx, TENANT, []) is None
    assert engine_ctx.redis.get(redis_keys.autonomous_reset(TENANT)) is None


def test_the_service_runs_the_autonomous_reset_on_its_thread(
    running_service: RunningService,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    """Through the service an audit starts the reset and answers at once (the tenant held, the
    loop free); the outcome is recorded when the reset ends (decision 505)."""
    svc = running_service
    make_tenant(TENANT)
    _autonomous_repo(tmp_path)
    seeded = seed_history(svc.ctx, TENANT)
    _leak(svc.ctx, seeded.ids["gamma"])
    reply = svc.client.send(AuditRequest(TENANT, seed=1), timeout=300)
    action = next(a for a in reply.tenants[TENANT]["actions"] if a["action"] == KIND)
    assert action["decision"] == "apply" and action["result"] == {"started": True}

    def recorded() -> bool:
        record = json.loads(str(svc.ctx.redis.get(redis_keys.autonomous_reset(TENANT))))
        return "generation" in record or "error" in record

    retry_until(recorded, timeout=600, what="the autonomous reset's outcome")
    record = json.loads(str(svc.ctx.redis.get(redis_keys.autonomous_reset(TENANT))))
    assert "error" not in record and "cross_project_leakage" in record["indicators"]
    assert read_journal(TENANT, svc.ctx.settings.roots)["stage"] == "done"
    assert record["generation"] == svc.ctx.vectors.generation(TENANT)  # type: ignore[attr-defined]
    assert svc.ctx.redis.get(redis_keys.WRITES_PAUSED) is None
