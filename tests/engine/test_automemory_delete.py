"""A topic file deleted from Claude Code's auto-memory retires its memory on the next sync (or
queues the retirement for review, as the tenant's agent settings say); a wiped directory does
not retire anything."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from nika_tui.automemory.claude_sync import memory_dir, sync_claude
from nika_tui.domain.envelope import NikaMeta, Trigger
from nika_tui.domain.memory import Status
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.engine.context import EngineContext
from nika_tui.engine.ingest import ingest
from nika_tui.engine.retire import load_record
from nika_tui.engine.review import list_items
from nika_tui.services.config_store import load_tenant, save_tenant

pytestmark = pytest.mark.embedder

T0 = datetime(2026, 3, 1, 9, tzinfo=UTC)
WORKDIR = "/srv/acme/web"


def _setup(ctx: EngineContext, needs_review: bool) -> tuple[str, str]:
    config = load_tenant("acme")
    agents = config.agents.model_copy(update={"retire_needs_review": needs_review})
    save_tenant(config.model_copy(update={"agents": agents}))
    ctx.clock = lambda: T0 + timedelta(days=1)
    meta = NikaMeta(timestamp=T0, project_id="web", trigger=Trigger.USER)
    kept = ingest(ctx, RememberRequest(tenant_id="acme", text="The web app deploys on Thursdays",
                                       meta=meta))  # fmt: skip
    gone = ingest(ctx, RememberRequest(tenant_id="acme", text="Staging lives on staging-1.acme",
                                       meta=meta))  # fmt: skip
    sync_claude(ctx, "acme", WORKDIR)
    return kept.id, gone.id


def _file_of(ctx: EngineContext, text: str) -> str:
    directory = memory_dir("acme", WORKDIR, ctx.settings.roots)
    return next(p.name for p in directory.glob("*.md") if text in p.read_text())


def test_a_deleted_file_retires_its_memory(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    kept, gone = _setup(engine_ctx, needs_review=False)
    name = _file_of(engine_ctx, "staging-1")
    (memory_dir("acme", WORKDIR, engine_ctx.settings.roots) / name).unlink()

    report = sync_claude(engine_ctx, "acme", WORKDIR)

    assert report.retired == [gone]
    record = load_record(engine_ctx, "acme", gone)
    assert record is not None and record.status is Status.RETIRED
    assert "deleted from Claude Code's auto-memory" in str(record.retire_reason)
    kept_record = load_record(engine_ctx, "acme", kept)
    assert kept_record is not None and kept_record.status is Status.CURRENT
    again = sync_claude(engine_ctx, "acme", WORKDIR)
    assert (again.written, again.retired) == ([], []), "not exported again, retired once"


def test_a_deleted_file_waits_for_review_when_the_tenant_says_so(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    _, gone = _setup(engine_ctx, needs_review=True)
    (
        memory_dir("acme", WORKDIR, engine_ctx.settings.roots) / _file_of(engine_ctx, "staging-1")
    ).unlink()

    report = sync_claude(engine_ctx, "acme", WORKDIR)

    [item] = list_items(engine_ctx.redis, "acme")
    assert report.retired == [f"review:{item.id}"] and item.old_id == gone
    record = load_record(engine_ctx, "acme", gone)
    assert record is not None and record.status is Status.CURRENT, "a person decides"
    assert sync_claude(engine_ctx, "acme", WORKDIR).written == [], "and it is not re-exported"


def test_a_wiped_directory_retires_nothing(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    kept, gone = _setup(engine_ctx, needs_review=False)
    shutil.rmtree(memory_dir("acme", WORKDIR, engine_ctx.settings.roots))

    report = sync_claude(engine_ctx, "acme", WORKDIR)

    assert report.retired == []
    for memory_id in (kept, gone):
        record = load_record(engine_ctx, "acme", memory_id)
        assert record is not None and record.status is Status.CURRENT
