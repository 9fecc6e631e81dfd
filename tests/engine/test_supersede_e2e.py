"""Supersede end to end: the real embedder, the rules judge, the service loop, the client."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.memory import Layer, MemoryRecord, Status
from nika_tui.domain.requests import RecallQuery, RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.engine.supersede import SUPERSEDE_MIN_COSINE
from tests.plugins.memory import RunningService

pytestmark = pytest.mark.embedder

MARCH = datetime(2026, 3, 1, 9, tzinfo=UTC)
JUNE = datetime(2026, 6, 1, 9, tzinfo=UTC)


def _remember(svc: RunningService, text: str, when: datetime, project: str = "web") -> Any:
    req = RememberRequest(
        tenant_id="acme", text=text, meta=NikaMeta(timestamp=when, project_id=project)
    )
    key = svc.client.remember(req)
    return svc.client.wait_ingested("acme", key, timeout=30)


def _record(svc: RunningService, memory_id: str) -> MemoryRecord:
    [point] = svc.ctx.vectors.retrieve("acme", Layer.SEMANTIC, [memory_id])
    return MemoryRecord.from_payload(dict(point.payload))


def _bus_kinds(svc: RunningService) -> list[str]:
    return [line.data["kind"] for line in svc.ctx.bus("acme").read() if line.data]


def test_staging_server_moved_retires_the_old_fact(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    svc = running_service
    old = _remember(svc, "The staging server is staging-1.acme.internal", MARCH)
    new = _remember(svc, "The staging server moved to staging-2.acme.internal", JUNE)
    assert new["retired"] == [old["id"]]
    assert float(new["judgements"][0]["cosine"]) >= SUPERSEDE_MIN_COSINE

    retired = _record(svc, old["id"])
    assert retired.status is Status.RETIRED
    assert retired.superseded_by == new["id"]
    assert retired.retired_at is not None and retired.retire_reason
    assert _record(svc, new["id"]).status is Status.CURRENT

    hits = svc.client.recall(RecallQuery(tenant_id="acme", query="where is the staging server"))
    assert [h.record.id for h in hits.hits] == [new["id"]]
    both = svc.client.recall(
        RecallQuery(tenant_id="acme", query="where is the staging server", include_retired=True)
    )
    assert {h.record.id for h in both.hits} == {old["id"], new["id"]}

    for start in (old["id"], new["id"]):
        chain = svc.client.history("acme", start)
        assert [r.id for r in chain] == [old["id"], new["id"]]
    assert "memory.retired" in _bus_kinds(svc)


def test_hedged_new_fact_goes_to_the_review_queue_and_retires_nothing(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    svc = running_service
    old = _remember(svc, "The staging server is staging-1.acme.internal", MARCH)
    new = _remember(
        svc, "The staging server might move to staging-3.acme.internal, not sure yet", JUNE
    )
    assert new["retired"] == []
    [review_id] = new["reviews"]
    [item] = svc.client.review_list("acme")
    assert item["id"] == review_id
    assert (item["old_id"], item["new_id"]) == (old["id"], new["id"])
    assert _record(svc, old["id"]).status is Status.CURRENT
    assert _record(svc, new["id"]).status is Status.CURRENT
    assert "review.requested" in _bus_kinds(svc)


def test_compatible_facts_are_both_kept(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    svc = running_service
    staging = _remember(svc, "The staging server is staging-1.acme.internal", MARCH)
    prod = _remember(svc, "The production server is prod-1.acme.internal", JUNE)
    assert prod["kept"] == [staging["id"]]  # judged (close enough), and kept
    assert prod["retired"] == [] and prod["reviews"] == []
    assert _record(svc, staging["id"]).status is Status.CURRENT
    assert svc.client.review_list("acme") == []


def test_a_backdated_fact_never_retires_a_newer_one(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    svc = running_service
    current = _remember(svc, "We deploy on Fridays", JUNE)
    history = _remember(svc, "We deploy on Thursdays", MARCH)  # learnt later, true earlier
    assert history["retired"] == []
    assert _record(svc, current["id"]).status is Status.CURRENT


def test_other_projects_are_not_candidates(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    svc = running_service
    web = _remember(svc, "The staging server is staging-1.acme.internal", MARCH, project="web")
    api = _remember(svc, "The staging server moved to staging-2.acme.internal", JUNE, project="api")
    assert api["judgements"] == []
    assert _record(svc, web["id"]).status is Status.CURRENT


def test_episodic_events_do_not_supersede_each_other(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    svc = running_service
    outcomes = []
    for text, when in (("Deployed v1.2 to staging", MARCH), ("Deployed v1.3 to staging", JUNE)):
        req = RememberRequest(
            tenant_id="acme",
            text=text,
            layer=Layer.EPISODIC,
            meta=NikaMeta(timestamp=when, project_id="web"),
        )
        outcomes.append(svc.client.wait_ingested("acme", svc.client.remember(req), timeout=30))
    assert outcomes[1]["judgements"] == [] and outcomes[1]["retired"] == []
    [p] = svc.ctx.vectors.retrieve("acme", Layer.EPISODIC, [outcomes[0]["id"]])
    assert p.payload["status"] == "current"
