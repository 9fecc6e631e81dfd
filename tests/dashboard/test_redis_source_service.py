"""The dashboard source against the real memory service (engine loop in a thread, real stores,
real embedder): the RPC shapes the dashboard relies on, end to end."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from nika_tui.dashboard.redis_source import RedisDashboardSource
from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.services.memory_client import MemoryClient
from nika_tui.settings import Settings
from tests.plugins.memory import RunningService

pytestmark = [pytest.mark.embedder, pytest.mark.slow]

OLD = "The staging server is staging-1.acme.internal"
HEDGED = "The staging server might move to staging-3.acme.internal, not sure yet"


def _remember(client: MemoryClient, text: str, when: datetime, session: str) -> Any:
    meta = NikaMeta(timestamp=when, project_id="web", session_id=session, agent_type="codex")
    req = RememberRequest(tenant_id="acme", text=text, meta=meta)
    return client.wait_ingested("acme", client.remember(req), timeout=30)


def test_recall_counts_review_and_purge_through_the_service(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    svc = running_service
    _remember(svc.client, OLD, datetime(2026, 3, 1, tzinfo=UTC), "s-old")
    _remember(svc.client, HEDGED, datetime(2026, 6, 1, tzinfo=UTC), "s-new")
    src = RedisDashboardSource(Settings.from_env())
    now = datetime.now(UTC)

    assert src.snapshot(now).service_ok
    hits = src.recall("acme", "which staging server?")
    assert hits.hits and "staging" in hits.hits[0].text
    assert hits.hits[0].envelope.get("project_id") == "web"
    empty = src.recall("acme", "the colour of the CEO's bicycle")
    assert empty.palace == "no memory for the colour of the CEO's bicycle" or empty.hits

    detail = src.tenant_detail("acme", now)
    assert detail.memory_counts["semantic"]["current"] == 2, detail.problems

    (item,) = src.review_items("acme")  # the hedged pair is UNCERTAIN
    assert (item.old.text, item.new.text) == (OLD, HEDGED)
    assert (item.old.session, item.new.session, item.new.agent) == ("s-old", "s-new", "codex")
    src.resolve_review("acme", item.id, "keep")
    assert src.review_items("acme") == []
    # The resolved pair stays in the hash as history: the overview counts pending ones only.
    assert src.snapshot(now).row("acme").review_count == 0  # type: ignore[union-attr]

    plan = src.purge_plan("acme")
    assert plan.items == () and plan.dry_run_count == 0
