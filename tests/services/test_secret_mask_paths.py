"""Secrets are masked on every write path: before the stream (so not in the AOF) and at the
service (for a writer that bypasses the client). Real embedded Redis, real service loop."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RecallQuery, RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.services import redis_keys
from nika_tui.services.memory_client import MemoryClient
from tests.helpers import retry_until
from tests.plugins.memory import RunningService


def _secret() -> str:
    return "sk-ant-api03-" + uuid.uuid4().hex + "XyZ"


def _aof(redis_client: redis.Redis) -> Path:
    config = redis_client.config_get("dir")
    return Path(str(config["dir"])) / "appendonly.aof"


def test_the_client_masks_before_the_stream_and_the_aof(
    redis_client: redis.Redis, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("tena")
    marker, secret = uuid.uuid4().hex, _secret()
    req = RememberRequest(
        tenant_id="tena",
        text=f"deploy key {marker}: {secret} and AWS_SECRET_ACCESS_KEY=abcDEF123456ghiJKL",
        meta=NikaMeta(timestamp=datetime(2026, 3, 1, tzinfo=UTC)),
    )
    MemoryClient(redis_client).remember(req)
    entries = redis_client.xrange(redis_keys.INGEST_STREAM)
    stored = json.loads(entries[-1][1]["req"])["text"]
    assert marker in stored and secret not in stored and "abcDEF123456ghiJKL" not in stored
    aof = _aof(redis_client)
    retry_until(lambda: marker in aof.read_text(errors="replace"), what="the AOF to hold it")
    assert secret not in aof.read_text(errors="replace")


@pytest.mark.embedder
def test_the_service_masks_a_raw_stream_entry_before_storing_it(
    running_service: RunningService,
    make_tenant: Callable[..., TenantConfig],
    redis_client: redis.Redis,
) -> None:
    make_tenant("tena")
    secret = _secret()
    req = RememberRequest(
        tenant_id="tena",
        text=f"the ops bot signs in with {secret} on the staging cluster",
        meta=NikaMeta(timestamp=datetime(2026, 3, 1, tzinfo=UTC)),
    )
    # A writer that skips MemoryClient (an older hook, a script): straight XADD.
    redis_client.xadd(redis_keys.INGEST_STREAM, {"req": req.model_dump_json()})

    def stored() -> str | None:
        hits = running_service.client.recall(
            RecallQuery(tenant_id="tena", query="how does the ops bot sign in on staging")
        ).hits
        return hits[0].record.text if hits else None

    text = retry_until(stored, timeout=30, what="the raw entry to be ingested")
    assert secret not in text and "[REDACTED]" in text
