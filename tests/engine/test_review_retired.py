"""The review queue never asks about a memory already retired (issue 21, decision 391).

Through the running service, with the rules judge and ``agents.retire_needs_review: false``: a
hedged fact queues an UNCERTAIN pair about the staging server; the old fact is then retired
another way (an agent's correction applied at once, or a supersede by a plain statement), and
the pair must leave the pending list, kept in history as ``obsolete``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from nika_tui.cli import main
from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import AgentPermissions, JudgeConfig, JudgeKind, TenantConfig
from nika_tui.services.config_store import save_tenant
from tests.plugins.memory import RunningService

pytestmark = pytest.mark.embedder
TENANT = "acme"
OLD = "The staging server is staging-1.acme.internal"
HEDGED = "I think the staging server might move to staging-3.acme.internal"
PLAIN = "The staging server moved to staging-2.acme.internal"


def _remember(svc: RunningService, text: str, month: int) -> dict[str, object]:
    when = datetime(2026, month, 1, tzinfo=UTC)
    meta = NikaMeta(timestamp=when, project_id="web")
    req = RememberRequest(tenant_id=TENANT, text=text, meta=meta, valid_from=when)
    return svc.client.wait_ingested(TENANT, svc.client.remember(req), timeout=60)


def _pending(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    assert main(["review", "list", "--tenant", TENANT, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    items: list[dict[str, object]] = out["items"] if isinstance(out, dict) else out
    return items


@pytest.fixture
def queued(
    make_tenant: Callable[..., TenantConfig], running_service: RunningService
) -> tuple[RunningService, str, str]:
    """The old fact and the review item a hedged fact queued about it."""
    make_tenant(TENANT)
    save_tenant(
        TenantConfig(
            tenant_id=TENANT,
            display_name="Acme",
            judge=JudgeConfig(kind=JudgeKind.RULES),
            agents=AgentPermissions(retire_needs_review=False),
        )
    )
    old = str(_remember(running_service, OLD, 3)["id"])
    hedged = _remember(running_service, HEDGED, 6)
    (review_id,) = hedged["reviews"]  # type: ignore[misc]
    return running_service, old, str(review_id)


def test_an_agent_correction_applied_at_once_closes_the_pair(
    queued: tuple[RunningService, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    svc, old, review_id = queued
    assert [i["id"] for i in _pending(capsys)] == [review_id]
    done = svc.client.agent_retire(TENANT, old, "corrected: staging-2", "", "codex")
    assert done["status"] == "retired"
    assert _pending(capsys) == []
    (item,) = svc.client.review_list(TENANT, include_resolved=True)
    assert (item["id"], item["status"]) == (review_id, "obsolete")


def test_a_supersede_by_a_later_fact_closes_the_pair(
    queued: tuple[RunningService, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    svc, old, _ = queued
    plain = _remember(svc, PLAIN, 9)
    assert old in plain["retired"]  # type: ignore[operator]
    assert _pending(capsys) == []
