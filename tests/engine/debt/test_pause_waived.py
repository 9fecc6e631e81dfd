"""A critical metric whose approved action changed nothing does not keep bulk ingestion paused,
and the person is told (issue 17, decision 446). Against the real memory service: its loop in
a thread on real Redis and Qdrant Edge, the real embedder, requests over its RPC stream."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from nika_tui.dashboard.redis_source import RedisDashboardSource
from nika_tui.domain import protocol_requests as req
from nika_tui.domain.envelope import NikaMeta, Trigger
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.services import redis_keys
from nika_tui.settings import Settings
from tests.plugins.debt import at_cosine, make_record, put, unit
from tests.plugins.memory import RunningService

pytestmark = [pytest.mark.embedder, pytest.mark.slow]

TENANT = "acme"


def _audit(svc: RunningService) -> dict[str, Any]:
    reply = svc.client.send(req.AuditRequest(TENANT, seed=1))
    result: dict[str, Any] = reply.tenants[TENANT]
    return result


def test_an_approved_dedup_that_merged_nothing_lifts_the_pause_and_says_so(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant(TENANT)
    svc = running_service
    rng = random.Random(3)
    rows = []
    for i in range(20):  # 40 points, each with a twin at cosine 0.98 in the other project
        v = unit(rng)
        rows.append((make_record(TENANT, f"fact {i}", project_id="web"), v))
        rows.append((make_record(TENANT, f"fact {i}", project_id="api"), at_cosine(v, 0.98, rng)))
    put(svc.ctx, rows)

    first = _audit(svc)
    assert first["critical"] and first["ingest_paused"] and first["pause_waived"] == []
    assert "duplicate_rate" in str(svc.ctx.redis.get(redis_keys.ingest_paused(TENANT)))
    dedup = next(a for a in first["actions"] if a["action"] == "dedup")

    approved = svc.client.send(req.DebtApplyRequest(TENANT, dedup["confirmation_id"])).result
    assert approved["rem"]["changed"] == 0  # REM never merges across projects
    assert "merged nothing" in approved["summary"]
    assert "bulk ingestion resumes" in approved["summary"]  # told, in the toast's sentence
    assert svc.ctx.redis.get(redis_keys.ingest_paused(TENANT)) is None

    second = _audit(svc)  # still critical by measure, but it pauses nothing now, and says so
    assert second["critical"] and not second["ingest_paused"]
    assert svc.ctx.redis.get(redis_keys.ingest_paused(TENANT)) is None
    assert [r.split(" ", 1)[0] for r in second["pause_waived"]] == ["duplicate_rate"]
    skipped = next(a for a in second["actions"] if a["action"] == "dedup")
    assert "confirmation_id" not in skipped and "changed nothing" in skipped["skipped"]
    lines = [ln.data for ln in svc.ctx.bus(TENANT).read() if ln.data]
    waived = [d for d in lines if d.get("kind") == "debt.pause_waived"]
    assert len(waived) == 1 and "changed nothing" in str(waived[0])
    view = RedisDashboardSource(Settings.from_env()).debt(TENANT)  # the debt screen's read
    assert view.ingest_paused == "" and view.pause_waived == tuple(second["pause_waived"])

    # A bulk write (a cron job's) is stored at once: the tenant is not paused.
    meta = NikaMeta(timestamp=datetime.now(UTC), project_id="web", trigger=Trigger.CRON)
    text = "The nightly build runs at 02:00"
    bulk = svc.client.remember(RememberRequest(tenant_id=TENANT, text=text, meta=meta))
    assert svc.client.wait_ingested(TENANT, bulk, timeout=60)["status"] == "ingested"
    # The memories changed: the dedup is asked again (a confirmation a person sees), and the
    # pause waits on that decision again.
    third = _audit(svc)
    assert "confirmation_id" in next(a for a in third["actions"] if a["action"] == "dedup")
    assert third["ingest_paused"] and third["pause_waived"] == []


def test_a_pause_for_another_metric_stays_and_is_named(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    """Only the held metric's reason is waived: a pause someone else set is never lifted."""
    make_tenant(TENANT)
    svc = running_service
    key = redis_keys.ingest_paused(TENANT)
    svc.ctx.redis.set(key, "operator: migration in progress")
    rng = random.Random(5)
    rows = []
    for i in range(20):
        v = unit(rng)
        rows.append((make_record(TENANT, f"fact {i}", project_id="web"), v))
        rows.append((make_record(TENANT, f"fact {i}", project_id="api"), at_cosine(v, 0.98, rng)))
    put(svc.ctx, rows)
    dedup = next(a for a in _audit(svc)["actions"] if a["action"] == "dedup")
    svc.ctx.redis.set(key, "operator: migration in progress")  # the audit's own replaced it
    approved = svc.client.send(req.DebtApplyRequest(TENANT, dedup["confirmation_id"])).result
    assert "bulk ingestion" not in approved["summary"]  # not the audit's pause: not ours to say
    assert svc.ctx.redis.get(key) == "operator: migration in progress"
