"""The review queue: durable across service restarts, approve = REPLACE, reject = KEEP, logged."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import redis

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.memory import Layer, Status
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.engine.server.loop import MemoryService
from nika_tui.errors import ValidationFailed
from nika_tui.services.memory_client import MemoryClient
from tests.helpers import retry_until
from tests.plugins.memory import RunningService

pytestmark = pytest.mark.embedder

OLD = "The staging server is staging-1.acme.internal"
HEDGED = "The staging server might move to staging-3.acme.internal, not sure yet"


def _remember(client: MemoryClient, text: str, when: datetime) -> Any:
    req = RememberRequest(
        tenant_id="acme", text=text, meta=NikaMeta(timestamp=when, project_id="web")
    )
    return client.wait_ingested("acme", client.remember(req), timeout=30)


def _status(svc: RunningService, memory_id: str) -> Status:
    [p] = svc.ctx.vectors.retrieve("acme", Layer.SEMANTIC, [memory_id])
    return Status(p.payload["status"])


def _bus(svc: RunningService, kind: str) -> list[dict[str, Any]]:
    return [
        ln.data["body"] for ln in svc.ctx.bus("acme").read() if ln.data and ln.data["kind"] == kind
    ]


def _queue_pair(svc: RunningService) -> tuple[str, str, str]:
    old = _remember(svc.client, OLD, datetime(2026, 3, 1, tzinfo=UTC))
    new = _remember(svc.client, HEDGED, datetime(2026, 6, 1, tzinfo=UTC))
    [review_id] = new["reviews"]
    return review_id, old["id"], new["id"]


def test_queue_survives_a_service_restart_and_approve_retires_the_old(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig], redis_url: str
) -> None:
    make_tenant("acme")
    svc = running_service
    review_id, old_id, new_id = _queue_pair(svc)

    # Restart: stop the loop, start a fresh service (new connection, same stores).
    svc.service.stop()
    retry_until(lambda: not svc.client.service_alive(), timeout=15, what="service stopped")
    own = redis.Redis.from_url(redis_url, decode_responses=True)
    ctx2 = type(svc.ctx)(settings=svc.ctx.settings, redis=own,
                         child_env=svc.ctx.child_env, secrets_env=svc.ctx.secrets_env,
                         vectors=svc.ctx.vectors, embedder=svc.ctx.embedder)  # fmt: skip
    second = MemoryService(ctx2)
    thread = threading.Thread(target=second.run, daemon=True)
    thread.start()
    try:
        retry_until(svc.client.service_alive, timeout=15, what="restarted service")
        [item] = svc.client.review_list("acme")
        assert item["id"] == review_id and item["status"] == "pending"

        resolved = svc.client.review_resolve("acme", review_id, "approve", note="it moved")
        assert resolved["status"] == "approved"
        assert _status(svc, old_id) is Status.RETIRED
        [p] = svc.ctx.vectors.retrieve("acme", Layer.SEMANTIC, [old_id])
        assert p.payload["superseded_by"] == new_id
        assert svc.client.review_list("acme") == []
        [logged] = _bus(svc, "review.resolved")
        assert logged["review_id"] == review_id and logged["decision"] == "approve"
        with pytest.raises(ValidationFailed, match="already approved"):
            svc.client.review_resolve("acme", review_id, "reject")
    finally:
        second.stop()
        thread.join(timeout=30)
        own.close()


def test_reject_keeps_both_and_is_logged(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    svc = running_service
    review_id, old_id, new_id = _queue_pair(svc)
    resolved = svc.client.review_resolve("acme", review_id, "reject")
    assert resolved["status"] == "rejected"
    assert _status(svc, old_id) is Status.CURRENT and _status(svc, new_id) is Status.CURRENT
    [logged] = _bus(svc, "review.resolved")
    # Both stayed current: the bus says "keep" (issue 17), whatever verb the CLI used.
    assert logged["decision"] == "keep"
    assert [i["status"] for i in svc.client.review_list("acme", include_resolved=True)] == [
        "rejected"
    ]


def test_keep_keeps_both_and_is_logged_as_keep(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    svc = running_service
    review_id, old_id, new_id = _queue_pair(svc)
    resolved = svc.client.review_resolve("acme", review_id, "keep")
    assert resolved["status"] == "rejected"  # the judge's training reads it as KEEP
    assert _status(svc, old_id) is Status.CURRENT and _status(svc, new_id) is Status.CURRENT
    [logged] = _bus(svc, "review.resolved")
    assert logged["decision"] == "keep"


def test_unknown_review_id_is_a_clear_error(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    with pytest.raises(ValidationFailed, match="no review 'nope'"):
        running_service.client.review_resolve("acme", "nope", "approve")
