"""A person edits a ``MEMORY.md`` pointer line: the wording is kept, a changed hook is a
correction that goes through ingest (decision 424). Real store, embedder and files."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from nika_tui.automemory.claude_sync import memory_dir, sync_claude
from nika_tui.domain.automemory import pointer_file
from nika_tui.domain.envelope import NikaMeta, Trigger
from nika_tui.domain.memory import Layer, Status
from nika_tui.domain.ports import PointFilter
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.engine.context import EngineContext
from nika_tui.engine.ingest import ingest

pytestmark = pytest.mark.embedder

T0 = datetime(2026, 3, 1, 9, tzinfo=UTC)
WORKDIR = "/srv/acme/web"
OLD = "The web app deploys to production on Thursdays at 10:00"
OTHER = "The staging database is restored from backup every Monday morning"


def _add(ctx: EngineContext, text: str) -> str:
    meta = NikaMeta(timestamp=T0, project_id="web", trigger=Trigger.USER)
    return ingest(ctx, RememberRequest(tenant_id="acme", text=text, meta=meta)).id


def _current(ctx: EngineContext) -> dict[str, str]:
    flt = PointFilter(equals={"status": Status.CURRENT.value})
    return {p.id: str(p.payload["text"]) for p in ctx.vectors.scroll("acme", Layer.SEMANTIC, flt)}


def _line_of(index: str, needle: str) -> str:
    return next(ln for ln in index.splitlines() if needle in ln)


def test_a_reworded_title_is_kept_verbatim_and_imports_nothing(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    _add(engine_ctx, OLD)
    _add(engine_ctx, OTHER)
    directory = memory_dir("acme", WORKDIR, engine_ctx.settings.roots)
    sync_claude(engine_ctx, "acme", WORKDIR)
    index_path = directory / "MEMORY.md"
    drawn = _line_of(index_path.read_text(), "Thursdays")
    name = pointer_file(drawn)
    mine = f"- [When we ship]({name}) — {drawn.split(' — ', 1)[1]}"
    index_path.write_text(index_path.read_text().replace(drawn, mine))
    before = _current(engine_ctx)
    report = sync_claude(engine_ctx, "acme", WORKDIR)
    assert report.imported == [] and _current(engine_ctx) == before  # no new fact in a title
    assert mine in index_path.read_text().splitlines()
    again = sync_claude(engine_ctx, "acme", WORKDIR)  # and on every pass after
    assert mine in index_path.read_text().splitlines()
    assert (again.imported, again.written, again.removed) == ([], [], [])


def test_a_changed_hook_is_a_correction_and_the_index_is_redrawn_from_it(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    old_id = _add(engine_ctx, OLD)
    directory = memory_dir("acme", WORKDIR, engine_ctx.settings.roots)
    sync_claude(engine_ctx, "acme", WORKDIR)
    index_path = directory / "MEMORY.md"
    drawn = _line_of(index_path.read_text(), "Thursdays")
    old_file = pointer_file(drawn)
    fixed = drawn.replace("Thursdays", "Fridays")
    index_path.write_text(index_path.read_text().replace(drawn, fixed))
    report = sync_claude(engine_ctx, "acme", WORKDIR)
    current = _current(engine_ctx)
    assert old_id in report.superseded and old_id not in current  # supersede applied
    assert any("Fridays" in t for t in current.values())
    # The old file and its pointer went with the retired fact; the new one is drawn from it.
    assert old_file is not None and not (directory / old_file).exists()
    index = index_path.read_text()
    assert "Thursdays" not in index and "Fridays" in _line_of(index, "Fridays")
    new_file = pointer_file(_line_of(index, "Fridays"))
    assert new_file is not None and "Fridays" in (directory / new_file).read_text()
    again = sync_claude(engine_ctx, "acme", WORKDIR)
    assert (again.imported, again.written, again.removed) == ([], [], [])
