"""Cross-tenant canaries: facts planted in tenant A never come back for tenant B."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RecallQuery, RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.engine.context import EngineContext
from nika_tui.engine.ingest import ingest_batch
from nika_tui.engine.recall import recall

pytestmark = pytest.mark.embedder

T0 = datetime(2026, 3, 1, tzinfo=UTC)

CANARIES = [
    "The staging server is canary-staging-7f3a.alpha.internal",
    "We deploy on Thursdays at 10:00 (canary 7f3a)",
    "Alice owns the billing service (canary 7f3a)",
    "The database password rotates every 30 days in vault path kv/alpha-7f3a",
    "The API uses Python 3.12 and FastAPI (canary 7f3a)",
    "Code review needs two approvals from the platform team (canary 7f3a)",
    "The on-call rotation is Alice, Bob, Chloé (canary 7f3a)",
    "Le serveur de préproduction est canary-7f3a.alpha.internal",
    "Tickets live in Linear under project key ALPHA-7f3a",
    "The CI runs on GitHub Actions with self-hosted runners (canary 7f3a)",
]
B_FACTS = [
    "The beta team deploys on Mondays",
    "The beta staging server is staging.beta.internal",
    "Beta uses Postgres 16",
]
SUBJECTS = [
    "staging server", "deploy day", "billing owner", "database password", "python version",
    "code review approvals", "on-call rotation", "serveur de préproduction", "tickets",
    "CI runners", "canary 7f3a", "alpha.internal", "vault path", "Linear project key",
    "FastAPI", "platform team", "Thursday deploy", "Alice", "self-hosted runners", "ALPHA-7f3a",
]  # fmt: skip
TEMPLATES = [
    "{s}", "what is the {s}", "where is the {s}", "tell me about {s}", "who handles {s}",
    "{s} details", "remind me of the {s}", "quel est le {s}", "any notes on {s}?",
    "latest info on {s}",
]  # fmt: skip


def _plant(ctx: EngineContext, tenant: str, texts: list[str]) -> list[str]:
    reqs = [
        RememberRequest(tenant_id=tenant, text=t, meta=NikaMeta(timestamp=T0, project_id="p"))
        for t in texts
    ]
    return [o.id for o in ingest_batch(ctx, reqs) if not isinstance(o, Exception)]


def test_tenant_b_never_sees_tenant_a_across_200_queries(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("alpha")
    make_tenant("beta")
    a_ids = set(_plant(engine_ctx, "alpha", CANARIES))
    b_ids = set(_plant(engine_ctx, "beta", B_FACTS))
    assert len(a_ids) == len(CANARIES) and len(b_ids) == len(B_FACTS)

    queries = [t.format(s=s) for s, t in itertools.product(SUBJECTS, TEMPLATES)]
    assert len(queries) == 200
    vectors = engine_ctx.embedder.embed(queries)  # one batch: the model is the slow part
    a_found: set[str] = set()
    for i, (query, vector) in enumerate(zip(queries, vectors, strict=True)):
        variant = {"include_retired": i % 3 == 0, "project_id": "p" if i % 2 else None}
        q = RecallQuery(tenant_id="beta", query=query, limit=10, **variant)
        res = recall(engine_ctx, q, vector)
        for hit in res.hits:
            assert hit.record.tenant_id == "beta", (query, hit.record.text)
            assert hit.record.id in b_ids
            assert "7f3a" not in hit.record.text
        # The same query in tenant A does find the canaries: the probe is a real one.
        a_res = recall(engine_ctx, RecallQuery(tenant_id="alpha", query=query), vector)
        a_found |= {h.record.id for h in a_res.hits}
    assert a_found == a_ids
