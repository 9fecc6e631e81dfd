"""The full MCP toolset over stdio (official SDK client) against ``nika mcp`` and a real service.

Every tool acts on the server's tenant (``NIKA_TENANT_ID``); no tool takes a tenant argument.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import anyio
import pytest

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.hierarchy import HierarchyNode, Level, NodeStatus
from nika_tui.domain.memory import Layer, MemoryRecord, Status
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import AgentPermissions, JudgeConfig, JudgeKind, TenantConfig
from nika_tui.engine.retire import load_record
from nika_tui.engine.review import get_item
from nika_tui.services.config_store import save_tenant
from nika_tui.services.hierarchy import open_hierarchy
from tests.plugins.memory import RunningService
from tests.support.mcp_stdio import TENANT, TOOLS, open_session, tool_text

pytestmark = [pytest.mark.embedder, pytest.mark.slow]

MARCH = datetime(2026, 3, 1, 9, tzinfo=UTC)
JUNE = datetime(2026, 6, 1, 9, tzinfo=UTC)


def remember(
    svc: RunningService, text: str, when: datetime, project: str = "acme-api", tenant: str = TENANT
) -> str:
    req = RememberRequest(
        tenant_id=tenant, text=text, meta=NikaMeta(timestamp=when, project_id=project)
    )
    return str(svc.client.wait_ingested(tenant, svc.client.remember(req), timeout=60)["id"])


def stored(svc: RunningService, memory_id: str, tenant: str = TENANT) -> MemoryRecord:
    record = load_record(svc.ctx, tenant, memory_id)
    assert record is not None, memory_id
    return record


Calls = list[tuple[str, dict[str, Any]]]


def session(calls: Calls) -> list[tuple[bool, str]]:
    """Run the calls in one MCP session; (is_error, text) of each."""

    async def go() -> list[tuple[bool, str]]:
        async with open_session() as s:
            listed = await s.list_tools()
            assert {t.name for t in listed.tools} == TOOLS
            for tool in listed.tools:
                # The tenant is the server's, never an argument an agent could set.
                assert not any("tenant" in p for p in tool.input_schema.get("properties", {}))
            out = []
            for name, args in calls:
                result = await s.call_tool(name, args)
                out.append((bool(result.is_error), tool_text(result)))
            return out

    return anyio.run(go)


@pytest.fixture
def acme(running_service: RunningService, make_tenant: Callable[..., TenantConfig]) -> Any:
    config = make_tenant(TENANT)
    svc = running_service
    old = remember(svc, "The staging server is staging-1.acme.internal", MARCH)
    new = remember(svc, "The staging server moved to staging-2.acme.internal", JUNE)
    return svc, config, old, new


def test_recall_as_of_layer_timeline_and_projects(acme: Any) -> None:
    svc, _config, old, new = acme
    results = session(
        [
            ("memory_recall", {"query": "where is the staging server", "as_of": "2026-04-01"}),
            ("memory_recall", {"query": "where is the staging server", "layer": "episodic"}),
            ("memory_recall", {"query": "staging", "as_of": "soon"}),
            ("memory_timeline", {"query": "where is the staging server"}),
            ("memory_projects", {}),
        ]
    )
    (e1, april), (e2, episodic), (e3, bad), (e4, timeline), (e5, projects) = results
    assert not (e1 or e2 or e4 or e5)
    assert f"[{old}]" in april and "staging-2" not in april
    assert episodic == "no memory for where is the staging server"
    assert e3 and "2026-03-15" in bad
    assert timeline.index(old) < timeline.index(new) and f"replaced by [{new}]" in timeline
    # Why the old version was retired (the judge's reason, stored with it) follows what replaced it.
    why = stored(svc, old).retire_reason
    lines = timeline.splitlines()
    replaced = next(i for i, line in enumerate(lines) if f"replaced by [{new}]" in line)
    assert why and lines[replaced + 1] == f"    why: {why}", timeline
    assert projects == "acme-api — semantic: 1 current, 1 retired"


def test_correct_waits_for_review_then_an_allowed_agent_resolves_it(acme: Any) -> None:
    svc, config, _old, new = acme
    # The path under test is a correction the judge does not settle by itself: the rules judge
    # leaves this one to the agent's retire (the offline judge would REPLACE it at ingest).
    config = config.model_copy(update={"judge": JudgeConfig(kind=JudgeKind.RULES)})
    save_tenant(config)
    [(err, corrected), (_e, listed), (refused, why)] = session(
        [
            (
                "memory_correct",
                {"memory_id": new, "corrected_text": "Staging runs on staging-9.acme.internal"},
            ),
            ("review_list", {}),
            ("review_resolve", {"review_id": "x", "decision": "approve"}),
        ]
    )
    assert not err and "waits for a person's review" in corrected, corrected
    review_id = corrected.rsplit("(review ", 1)[1].rstrip(")")
    assert f"[{review_id}]" in listed and "staging-9" in listed
    assert refused and "does not let agents resolve reviews" in why
    # The hint names the command a person really has (there is no `nika review resolve`).
    assert f"nika review approve|reject --tenant {TENANT} ID" in why, why
    assert stored(svc, new).status is Status.CURRENT  # nothing retired yet

    save_tenant(config.model_copy(update={"agents": AgentPermissions(resolve_reviews=True)}))
    [(err, resolved)] = session(
        [("review_resolve", {"review_id": review_id, "decision": "approve", "note": "checked"})]
    )
    assert not err and resolved == f"review {review_id} approved"
    retired = stored(svc, new)
    assert retired.status is Status.RETIRED and retired.superseded_by


def test_retire_applies_at_once_when_the_tenant_allows_and_never_crosses_tenants(
    acme: Any, make_tenant: Callable[..., TenantConfig]
) -> None:
    svc, config, _old, new = acme
    make_tenant("globex")
    theirs = remember(svc, "Globex deploys on Fridays at noon", MARCH, tenant="globex")
    save_tenant(config.model_copy(update={"agents": AgentPermissions(retire_needs_review=False)}))
    [(e1, no_reason), (e2, done), (e3, other), (e4, again)] = session(
        [
            ("memory_retire", {"memory_id": new, "reason": " "}),
            ("memory_retire", {"memory_id": new, "reason": "staging was decommissioned"}),
            ("memory_retire", {"memory_id": theirs, "reason": "not yours"}),
            ("memory_history", {"memory_id": new}),
        ]
    )
    assert e1 and "reason is required" in no_reason
    assert not e2 and done == f"retired [{new}]"
    record = stored(svc, new)
    assert record.status is Status.RETIRED and "staging was decommissioned" in str(
        record.retire_reason
    )
    assert e3 and "no memory" in other  # another tenant's id is not found from acme
    assert stored(svc, theirs, "globex").status is Status.CURRENT
    assert not e4 and "retired" in again  # kept in history: never deleted
    assert svc.ctx.vectors.count(TENANT, Layer.SEMANTIC) == 2


def test_hierarchy_status_and_session_digest(acme: Any) -> None:
    now = datetime.now(UTC)
    h = open_hierarchy(TENANT)
    h.upsert(HierarchyNode(id="acme-api", level=Level.PROJECT, title="API", updated_at=now))
    h.upsert(
        HierarchyNode(
            id="JOB-7",
            level=Level.JOB,
            title="Move staging",
            parent_id="acme-api",
            status=NodeStatus.IN_PROGRESS,
            updated_at=now,
        )
    )
    [(e1, status), (e2, missing), (e3, digest)] = session(
        [
            ("hierarchy_status", {"node_id": "JOB-7"}),
            ("hierarchy_status", {"node_id": "JOB-404"}),
            ("session_digest", {"project_id": "acme-api"}),
        ]
    )
    assert not (e1 or e2 or e3)
    assert '"status": "in_progress"' in status and '"title": "Move staging"' in status
    assert missing == "JOB-404: not in the hierarchy"
    assert "staging-1" not in digest  # retired facts are not in the digest
    assert "staging-2.acme.internal" in digest and "JOB-7 [in_progress] Move staging" in digest
    assert "Pending reviews: 0" in digest and "1 current memories in 1 projects" in digest


def test_retire_waits_for_review_by_default_and_a_reject_keeps_it_noting_the_agent(
    acme: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc, config, _old, new = acme
    monkeypatch.setenv("NIKA_AGENT_TYPE", "codex")
    assert config.agents.retire_needs_review  # the default, not set by this test
    [(err, asked), (_e, listed)] = session(
        [
            ("memory_retire", {"memory_id": new, "reason": "staging-2 was shut down"}),
            ("review_list", {}),
        ]
    )
    assert not err and f"retiring [{new}] waits for a person's review" in asked, asked
    review_id = asked.rsplit("(review ", 1)[1].rstrip(")")
    assert f"[{review_id}]" in listed and "(retire: staging-2 was shut down)" in listed
    assert stored(svc, new).status is Status.CURRENT

    save_tenant(config.model_copy(update={"agents": AgentPermissions(resolve_reviews=True)}))
    [(err, rejected), (_e, after)] = session(
        [
            ("review_resolve", {"review_id": review_id, "decision": "reject", "note": "in use"}),
            ("review_list", {}),
        ]
    )
    assert not err and rejected == f"review {review_id} rejected"
    assert after == "no pending review"
    assert stored(svc, new).status is Status.CURRENT  # reject keeps it
    item = get_item(svc.ctx.redis, TENANT, review_id)
    assert item is not None and item.note == "by codex: in use"


def test_correct_under_the_default_judge_and_with_an_immediate_retire(acme: Any) -> None:
    svc, config, _old, new = acme
    assert config.judge.kind is JudgeKind.OFFLINE  # the default judge, not set by this test
    [(err, corrected)] = session(
        [
            (
                "memory_correct",
                {
                    "memory_id": new,
                    "corrected_text": "The staging server moved to staging-3.acme.internal",
                },
            )
        ]
    )
    # The offline judge sees a newer value of the same fact: supersede retires the old one at
    # ingest, so no agent retire (and no review) is needed.
    assert not err and corrected.endswith(f"replaces [{new}] (supersede retired it)"), corrected
    third = corrected.split("[", 2)[1].split("]", 1)[0]
    assert stored(svc, new).status is Status.RETIRED and stored(svc, new).superseded_by == third
    assert stored(svc, third).text.endswith("staging-3.acme.internal")

    # The rules judge leaves the correction to the agent's retire; the tenant lets it apply.
    save_tenant(
        config.model_copy(
            update={
                "judge": JudgeConfig(kind=JudgeKind.RULES),
                "agents": AgentPermissions(retire_needs_review=False),
            }
        )
    )
    [(err, applied), (_e, pending)] = session(
        [
            (
                "memory_correct",
                {"memory_id": third, "corrected_text": "Staging runs on staging-9.acme.internal"},
            ),
            ("review_list", {}),
        ]
    )
    assert not err and applied.startswith(f"retired [{third}] by ["), applied
    fourth = applied.rsplit("[", 1)[1].rstrip("]")
    record = stored(svc, third)
    assert record.status is Status.RETIRED and record.superseded_by == fourth
    # The rules judge may queue its own doubt at ingest; the agent's retire is not queued.
    assert "mcp asks" not in pending


def test_recall_by_project_and_with_retired_versions(acme: Any) -> None:
    svc, _config, old, new = acme
    web = remember(svc, "The staging server of the web app is web-stg.acme.internal", JUNE, "web")
    query = "where is the staging server"
    [(e1, current), (e2, with_retired), (e3, web_only), (e4, none)] = session(
        [
            ("memory_recall", {"query": query, "project_id": "acme-api"}),
            ("memory_recall", {"query": query, "project_id": "acme-api", "include_retired": True}),
            ("memory_recall", {"query": query, "project_id": "web"}),
            ("memory_recall", {"query": query, "project_id": "billing"}),
        ]
    )
    assert not (e1 or e2 or e3 or e4)
    assert f"[{new}]" in current and f"[{old}]" not in current and f"[{web}]" not in current
    assert f"[{new}]" in with_retired and f"[{old}]" in with_retired
    assert f"[{web}]" not in with_retired
    assert f"[{web}]" in web_only and f"[{new}]" not in web_only
    assert none == f"no memory for {query}"


def test_hierarchy_status_of_a_task(acme: Any) -> None:
    now = datetime.now(UTC)
    h = open_hierarchy(TENANT)
    h.upsert(HierarchyNode(id="acme-api", level=Level.PROJECT, title="API", updated_at=now))
    h.upsert(
        HierarchyNode(
            id="JOB-7", level=Level.JOB, title="Move staging", parent_id="acme-api", updated_at=now
        )
    )
    h.upsert(
        HierarchyNode(
            id="TASK-7.1",
            level=Level.TASK,
            title="Point DNS at staging-2",
            parent_id="JOB-7",
            status=NodeStatus.BLOCKED,
            updated_at=now,
        )
    )
    [(e1, task), (e2, job)] = session(
        [("hierarchy_status", {"node_id": "TASK-7.1"}), ("hierarchy_status", {"node_id": "JOB-7"})]
    )
    assert not (e1 or e2)
    info = json.loads(task)
    assert (info["level"], info["status"], info["parent_id"]) == ("task", "blocked", "JOB-7")
    assert info["title"] == "Point DNS at staging-2" and info["children"] == {}
    assert json.loads(job)["children"] == {"TASK-7.1": "blocked"}
