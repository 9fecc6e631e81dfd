"""Recall: PALACE (EN/FR), the relevance floor, filters, retired memories, the golden rule,
the query log and active refs."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from nika_tui.domain.envelope import ActionType, Domain, NikaMeta
from nika_tui.domain.hierarchy import HierarchyNode, Level, NodeStatus
from nika_tui.domain.memory import Layer
from nika_tui.domain.requests import RecallQuery, RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.engine.context import EngineContext
from nika_tui.engine.ingest import IngestOutcome, ingest
from nika_tui.engine.recall import PALACE_MIN_COSINE, active_sessions, recall
from nika_tui.engine.retire import retire
from nika_tui.services import redis_keys

pytestmark = pytest.mark.embedder

T0 = datetime(2026, 3, 1, 9, tzinfo=UTC)


def _add(
    ctx: EngineContext,
    text: str,
    tenant: str = "acme",
    project: str = "web",
    job: str = "",
    domain: Domain | None = None,
    action: ActionType | None = None,
) -> IngestOutcome:
    meta = NikaMeta(timestamp=T0, project_id=project, job_id=job, domain=domain, action_type=action)
    return ingest(ctx, RememberRequest(tenant_id=tenant, text=text, meta=meta))


def _ids(ctx: EngineContext, **kw: object) -> list[str]:
    q = RecallQuery.model_validate({"tenant_id": "acme", **kw})
    return [h.record.id for h in recall(ctx, q).hits]


def test_relevant_memory_comes_back_with_its_cosine(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    fact = _add(engine_ctx, "We deploy on Thursdays")
    _add(engine_ctx, "Alice owns the billing service")
    res = recall(engine_ctx, RecallQuery(tenant_id="acme", query="which day do we deploy"))
    assert res.palace is None
    assert res.hits[0].record.id == fact.id
    assert all(h.cosine >= PALACE_MIN_COSINE for h in res.hits)


@pytest.mark.parametrize(
    ("language", "expected"),
    [("en", "no memory for {q}"), ("fr", "aucun souvenir en RAG pour {q}")],
    ids=["english", "french"],
)
def test_palace_answer_when_nothing_relevant(
    engine_ctx: EngineContext,
    make_tenant: Callable[..., TenantConfig],
    language: str,
    expected: str,
) -> None:
    make_tenant("acme", language=language)
    _add(engine_ctx, "We deploy on Thursdays")
    _add(engine_ctx, "The staging server is staging-1.acme.internal")
    query = "what is the wifi password of the office"
    res = recall(engine_ctx, RecallQuery(tenant_id="acme", query=query))
    assert res.hits == []
    assert res.palace == expected.format(q=query)


def test_empty_tenant_gets_palace(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    res = recall(engine_ctx, RecallQuery(tenant_id="acme", query="staging server"))
    assert res.hits == [] and res.palace == "no memory for staging server"


def test_retired_memories_only_with_include_retired(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    fact = _add(engine_ctx, "The database is Postgres 14")
    retire(engine_ctx, "acme", Layer.SEMANTIC, fact.id, None, "test: obsolete")
    assert _ids(engine_ctx, query="what database do we use") == []
    assert _ids(engine_ctx, query="what database do we use", include_retired=True) == [fact.id]


def test_filters_by_project_job_domain_and_action_type(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    web = _add(engine_ctx, "The web app deploys with Docker Compose", project="web", job="JOB-1",
               domain=Domain.INFRA, action=ActionType.DEPLOY)  # fmt: skip
    api = _add(engine_ctx, "The API deploys with Helm charts", project="api", job="JOB-2",
               domain=Domain.AGENT, action=ActionType.CONFIG)  # fmt: skip
    q = "deploys with Docker Compose or Helm charts"
    assert set(_ids(engine_ctx, query=q)) == {web.id, api.id}
    assert _ids(engine_ctx, query=q, project_id="api") == [api.id]
    assert _ids(engine_ctx, query=q, job_id="JOB-1") == [web.id]
    assert _ids(engine_ctx, query=q, domain="agent") == [api.id]
    assert _ids(engine_ctx, query=q, action_type="deploy") == [web.id]
    assert _ids(engine_ctx, query=q, project_id="nowhere") == []


def test_golden_rule_status_comes_from_the_hierarchy(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    h = engine_ctx.hierarchy("acme")
    h.upsert(HierarchyNode(id="web", level=Level.PROJECT, title="Web", updated_at=T0))
    h.upsert(HierarchyNode(id="JOB-12", level=Level.JOB, title="Login page", parent_id="web",
                           status=NodeStatus.IN_PROGRESS, updated_at=T0))  # fmt: skip
    h.upsert(HierarchyNode(id="wire-sso", level=Level.TASK, title="SSO", parent_id="JOB-12",
                           status=NodeStatus.BLOCKED, updated_at=T0))  # fmt: skip
    # A stale remembered summary says "done": the hierarchy, not the memory, gives the status.
    _add(engine_ctx, "JOB-12 (login page) is done", job="JOB-12")
    res = recall(engine_ctx, RecallQuery(tenant_id="acme", query="what is the status of job-12"))
    assert res.hits and res.hits[0].record.meta.job_id == "JOB-12"
    assert res.hierarchy["JOB-12"]["status"] == "in_progress"
    # Ids known to the hierarchy count even without the JOB-/TASK- pattern; unknown ones say so.
    res = recall(engine_ctx, RecallQuery(tenant_id="acme", query="is wire-sso finished? TASK-404"))
    assert res.hierarchy["wire-sso"]["status"] == "blocked"
    assert res.hierarchy["TASK-404"]["status"] is None
    res = recall(engine_ctx, RecallQuery(tenant_id="acme", query="login page", job_id="JOB-12"))
    assert res.hierarchy["JOB-12"]["status"] == "in_progress"


def test_every_recall_is_logged_and_its_hits_held_by_the_session(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    fact = _add(engine_ctx, "We deploy on Thursdays")
    recall(engine_ctx, RecallQuery(tenant_id="acme", query="deploy day", project_id="web",
                                   session_id="sess-1"))  # fmt: skip
    recall(engine_ctx, RecallQuery(tenant_id="acme", query="wifi password"))
    rows = engine_ctx.redis.xrange(redis_keys.query_log("acme"))
    assert len(rows) == 2
    first, second = rows[0][1], rows[1][1]
    assert first["query"] == "deploy day" and first["project_id"] == "web"
    assert json.loads(first["ids"]) == [fact.id]
    assert json.loads(first["cosines"])[0] >= PALACE_MIN_COSINE
    assert first["palace"] == "0" and second["palace"] == "1"
    assert json.loads(second["ids"]) == []
    now = engine_ctx.clock().timestamp()
    assert active_sessions(engine_ctx.redis, "acme", fact.id, now) == ["sess-1"]
    assert active_sessions(engine_ctx.redis, "acme", fact.id, now + 7200) == []
