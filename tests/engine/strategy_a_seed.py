"""A tenant with a seeded history for strategy A: duplicates, a server that moved twice, a
private fact, a masked secret, a hierarchy with finished and open jobs, a review pair."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from nika_tui.domain.hierarchy import HierarchyNode, Level, NodeStatus
from nika_tui.domain.memory import Layer, MemoryRecord, Status
from nika_tui.domain.ports import VectorPoint
from nika_tui.engine.context import EngineContext
from nika_tui.engine.review import ReviewItem, review_id
from nika_tui.services import redis_keys
from tests.plugins.debt import make_record

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)

QUERIES: tuple[tuple[str, str], ...] = (
    ("where is the staging server", "The staging server moved to gamma.internal"),
    ("which API handles payments", "Payments use the Stripe API in test mode"),
    ("how are checkout totals rounded", "Checkout totals are rounded to two decimals"),
    ("which database holds the orders", "We decided to use PostgreSQL 16 for the orders database"),
    ("when is the search index rebuilt", "The search index is rebuilt nightly by cron at 02:00"),
    ("what is the frontend built with", "The frontend is built with Vite and React 18"),
    ("where does the CI pipeline run", "The CI pipeline runs on GitHub Actions with two workers"),
    ("where are product images stored", "Product images are stored in the S3 bucket shop-media"),
    ("what is the API rate limit", "The API rate limit is 100 requests per minute per client"),
    ("how long are error logs kept", "Error logs are shipped to Loki and kept for 14 days"),
    (
        "what does the deploy script need",
        "The deploy script reads DEPLOY_TOKEN=[REDACTED] from vault",
    ),
    ("how much does Acme Corp pay per month", "#private Acme Corp pays 12k euros per month"),
)
PRIVATE_TEXTS = (QUERIES[10][1], QUERIES[11][1])


@dataclass
class Seeded:
    """Ids of the seeded memories."""

    ids: dict[str, str] = field(default_factory=dict)
    retired: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    live: int = 0


def seed_history(ctx: EngineContext, tenant_id: str) -> Seeded:
    """Write the history straight into the store (vectors from the real embedder)."""
    out = Seeded()
    h = ctx.hierarchy(tenant_id)
    for node_id, level, status, parent in (
        ("s1", Level.STRATEGY, NodeStatus.IN_PROGRESS, None),
        ("shop", Level.PROJECT, NodeStatus.IN_PROGRESS, "s1"),
        ("checkout", Level.JOB, NodeStatus.DONE, "shop"),
        ("search", Level.JOB, NodeStatus.IN_PROGRESS, "shop"),
        ("search-index", Level.TASK, NodeStatus.TODO, "search"),
        ("infra", Level.PROJECT, NodeStatus.IN_PROGRESS, "s1"),
        ("migrate", Level.JOB, NodeStatus.DONE, "infra"),
    ):
        h.upsert(HierarchyNode(id=node_id, level=level, status=status, parent_id=parent,
                               title=node_id.replace("-", " "), updated_at=T0))  # fmt: skip
    recs: list[MemoryRecord] = []

    def add(text: str, day: int, project: str, job: str = "", **kw: object) -> MemoryRecord:
        rec = make_record(tenant_id, text, valid_from=T0 + timedelta(days=day),
                          project_id=project, job_id=job, **kw)  # type: ignore[arg-type]  # fmt: skip
        recs.append(rec)
        return rec

    gamma = add(QUERIES[0][1], 20, "infra", "migrate", session_id="s3")
    beta = add("The staging server moved to beta.internal", 10, "infra", "migrate",
               status=Status.RETIRED, superseded_by=gamma.id, retired_at=T0 + timedelta(days=20),
               retire_reason="rules: newer value")  # fmt: skip
    alpha = add("The staging server is alpha.internal", 1, "infra", "migrate",
                status=Status.RETIRED, superseded_by=beta.id, retired_at=T0 + timedelta(days=10),
                retire_reason="rules: newer value")  # fmt: skip
    out.ids.update(gamma=gamma.id, beta=beta.id, alpha=alpha.id)
    out.retired += [beta.id, alpha.id]
    add(QUERIES[1][1], 3, "shop", "checkout", files=("pay.py",))
    first = add(QUERIES[2][1], 4, "shop", "checkout", session_id="s1")
    out.ids["rounding"] = first.id
    for i in range(3):  # the same fact recorded again by later sessions
        out.duplicates.append(add(QUERIES[2][1] + ("." if i else ""), 5 + i, "shop", "checkout",
                                  session_id=f"s{2 + i}").id)  # fmt: skip
    pg = add(QUERIES[3][1], 6, "shop", "checkout")
    mysql = add("We use MySQL 5.7 for the orders database", 2, "shop", "checkout",
                status=Status.RETIRED, superseded_by=pg.id, retired_at=T0 + timedelta(days=6),
                retire_reason="rules: newer value")  # fmt: skip
    out.retired.append(mysql.id)
    add(QUERIES[4][1], 8, "shop", "search", task_id="search-index")
    vite = add(QUERIES[5][1], 9, "shop")
    webpack = add("The frontend is built with Webpack 4", 1, "shop", status=Status.RETIRED,
                  superseded_by=vite.id, retired_at=T0 + timedelta(days=9),
                  retire_reason="rules: newer value")  # fmt: skip
    out.retired.append(webpack.id)
    add(QUERIES[6][1], 2, "infra")
    out.duplicates.append(add(QUERIES[6][1], 12, "infra", session_id="s9").id)
    add(QUERIES[7][1], 3, "shop")
    add(QUERIES[8][1], 4, "shop", "search")
    add(QUERIES[9][1], 5, "infra")
    add("Database backups run every six hours to the backup host", 6, "infra", "migrate")
    out.ids["secret"] = add(QUERIES[10][1], 7, "infra").id
    out.ids["private"] = add(QUERIES[11][1], 7, "shop").id
    add("Session: fixed the flaky checkout test by freezing the clock", 5, "shop", "checkout",
        layer=Layer.EPISODIC, session_id="s2")  # fmt: skip
    p8080 = add("The web server listens on port 8080", 11, "shop")
    p8081 = add("The web server might listen on port 8081 now", 12, "shop")
    vectors = ctx.embedder.embed([r.text for r in recs])
    for layer in Layer:
        points = [VectorPoint(r.id, v, r.text, r.to_payload())
                  for r, v in zip(recs, vectors, strict=True) if r.layer is layer]  # fmt: skip
        ctx.vectors.upsert(tenant_id, layer, points)
    item = ReviewItem(
        id=review_id(p8080.id, p8081.id), tenant_id=tenant_id, layer=Layer.SEMANTIC,
        old_id=p8080.id, new_id=p8081.id, old_text=p8080.text, new_text=p8081.text,
        old_valid_from=p8080.valid_from, new_valid_from=p8081.valid_from,
        reason="hedged", judge="rules", created_at=T0 + timedelta(days=12),
    )  # fmt: skip
    ctx.redis.hset(redis_keys.review_queue(tenant_id), item.id, item.model_dump_json())
    flush = getattr(ctx.vectors, "flush", None)
    if callable(flush):
        flush()
    out.live = len(recs)
    return out


def recall_at_5(ctx: EngineContext, tenant_id: str) -> float:
    """Share of :data:`QUERIES` whose expected fact is among the top 5 current hits."""
    from nika_tui.domain.requests import RecallQuery
    from nika_tui.engine.recall import recall

    def key(text: str) -> str:
        return " ".join(text.casefold().rstrip(".").split())

    found = 0
    vectors = ctx.embedder.embed([q for q, _ in QUERIES])
    for (query, expected), vector in zip(QUERIES, vectors, strict=True):
        q = RecallQuery(tenant_id=tenant_id, query=query, limit=5)
        hits = recall(ctx, q, vector).hits
        found += any(key(h.record.text) == key(expected) for h in hits)
    return found / len(QUERIES)
