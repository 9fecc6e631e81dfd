"""Gemini CLI's ``GEMINI.md``: nika's block round trip on real files, the real store and the
real embedder — export, a line added in the block imported through ingest, an edited line
superseding the fact it came from, the person's text around the block untouched, idempotent."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from nika_tui.automemory.codex_sync import BEGIN, END, gemini_md, sync_gemini
from nika_tui.domain.envelope import NikaMeta, Trigger
from nika_tui.domain.memory import Layer, MemoryRecord, Status
from nika_tui.domain.ports import PointFilter
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.engine.context import EngineContext
from nika_tui.engine.history import history
from nika_tui.engine.ingest import ingest

pytestmark = pytest.mark.embedder

T0 = datetime(2026, 3, 1, 9, tzinfo=UTC)
HEAD = "# Gemini house rules\nAnswer in British English.\n\n"
TAIL = "\n## Notes (a person's, below nika's block)\nCI runs on every push.\n"


def _current(ctx: EngineContext) -> dict[str, MemoryRecord]:
    flt = PointFilter(equals={"status": Status.CURRENT.value})
    return {
        p.id: MemoryRecord.from_payload(dict(p.payload))
        for p in ctx.vectors.scroll("acme", Layer.SEMANTIC, flt)
    }


def test_gemini_md_block_round_trip(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    engine_ctx.clock = lambda: T0 + timedelta(days=1)
    meta = NikaMeta(timestamp=T0, project_id="web", trigger=Trigger.USER)
    deploy = ingest(
        engine_ctx,
        RememberRequest(
            tenant_id="acme",
            text="The web app deploys to production on Thursdays at 10:00",
            meta=meta,
        ),
    )
    path = gemini_md("acme", engine_ctx.settings.roots)
    assert path.name == "GEMINI.md" and path.parent.name == ".gemini"
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text(HEAD)

    # Export: the fact goes into nika's block, after the person's text.
    first = sync_gemini(engine_ctx, "acme")
    text = path.read_text()
    assert first.written == [deploy.id]
    assert text.startswith(HEAD) and BEGIN in text and text.rstrip().endswith(END)
    assert "- (project) The web app deploys to production on Thursdays at 10:00" in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    # The agent (or a person) adds a line inside the block; the person adds notes below it.
    added = "- The staging database is restored from backup every Monday"
    path.write_text(text.replace(END, f"{added}\n{END}") + TAIL)
    second = sync_gemini(engine_ctx, "acme")
    assert len(second.imported) == 1 and second.written == [] and second.superseded == []
    current = _current(engine_ctx)
    [monday] = second.imported
    assert current[monday].text == added.removeprefix("- ")
    assert current[monday].meta.agent_type == "gemini-cli"  # imported as Gemini CLI's
    assert deploy.id in current  # another fact: nothing superseded
    text = path.read_text()
    assert text.startswith(HEAD) and text.endswith(TAIL) and added in text

    # An edited line supersedes the fact it came from, and is kept as written.
    engine_ctx.clock = lambda: T0 + timedelta(days=2)
    edited = text.replace("on Thursdays at 10:00", "on Fridays at 10:00")
    path.write_text(edited)
    third = sync_gemini(engine_ctx, "acme")
    assert len(third.imported) == 1 and deploy.id in third.superseded
    current = _current(engine_ctx)
    assert deploy.id not in current
    [fridays] = third.imported
    assert current[fridays].text == "The web app deploys to production on Fridays at 10:00"
    assert current[fridays].meta.project_id == "web"  # the project of the line it edits
    chain = history(engine_ctx, "acme", deploy.id)
    assert chain[0].status is Status.RETIRED and chain[0].superseded_by == fridays
    assert path.read_text() == edited  # the edit kept verbatim, the rest untouched

    # Idempotent: nothing changed, nothing imported, written or removed; the file as it was.
    fourth = sync_gemini(engine_ctx, "acme")
    assert (fourth.imported, fourth.written, fourth.removed) == ([], [], [])
    assert path.read_text() == edited
    manifest = json.loads(next(engine_ctx.settings.data_root.rglob("gemini-all.json")).read_text())
    assert sorted(e["memory_id"] for e in manifest["files"].values()) == sorted([monday, fridays])
