"""The audit's strategy A suggestions → a fresh start, as auto_actions.compress allows."""

from __future__ import annotations

import pytest

from nika_tui.domain.tenant import AutoMode
from nika_tui.engine.context import EngineContext
from nika_tui.engine.kernels.confirmations import list_confirmations
from nika_tui.engine.reset_trigger import KIND, decide_reset
from nika_tui.services.config_store import load_tenant, save_tenant

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
