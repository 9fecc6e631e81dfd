"""Auto-memory sync on real directories, the real store and the real embedder."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from nika_tui.automemory.claude_sync import memory_dir, sync_claude
from nika_tui.automemory.codex_sync import (
    BEGIN,
    END,
    agents_md,
    gemini_md,
    opencode_agents_md,
    sync_codex,
    sync_gemini,
    sync_opencode,
)
from nika_tui.domain.automemory import (
    INDEX_MAX_CHARS,
    INDEX_MAX_LINES,
    MemoryKind,
    js_length,
    parse_topic,
    pointer_file,
)
from nika_tui.domain.envelope import ActionType, Intent, NikaMeta, Trigger
from nika_tui.domain.memory import Layer, MemoryRecord, Status
from nika_tui.domain.ports import PointFilter
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.engine.context import EngineContext
from nika_tui.engine.history import history
from nika_tui.engine.ingest import IngestOutcome, ingest, ingest_batch
from nika_tui.engine.retire import retire

pytestmark = pytest.mark.embedder

T0 = datetime(2026, 3, 1, 9, tzinfo=UTC)
WORKDIR = "/srv/acme/web"


def _add(ctx: EngineContext, text: str, **meta: object) -> IngestOutcome:
    fields: dict[str, object] = {"timestamp": T0, "project_id": "web", "trigger": Trigger.USER}
    fields.update(meta)
    return ingest(ctx, RememberRequest(tenant_id="acme", text=text, meta=NikaMeta(**fields)))  # type: ignore[arg-type]


def _topics(directory: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in directory.glob("*.md") if p.name != "MEMORY.md"}


def _current_texts(ctx: EngineContext) -> dict[str, str]:
    flt = PointFilter(equals={"status": Status.CURRENT.value})
    return {p.id: str(p.payload["text"]) for p in ctx.vectors.scroll("acme", Layer.SEMANTIC, flt)}


def test_round_trip_export_agent_edit_import_and_supersede(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    engine_ctx.clock = lambda: T0 + timedelta(days=1)
    deploy = _add(engine_ctx, "The web app deploys to production on Thursdays at 10:00")
    _add(engine_ctx, "Prefer small pull requests, never squash review fixes", intent=Intent.FIX)
    _add(engine_ctx, "Refactored the parser loop", action_type=ActionType.CODE)  # derivable
    directory = memory_dir("acme", WORKDIR, engine_ctx.settings.roots)

    first = sync_claude(engine_ctx, "acme", WORKDIR)
    topics = _topics(directory)
    assert len(first.written) == 2 == len(topics)  # the code-derivable one stays out
    kinds = {parse_topic(t).kind for t in topics.values()}
    assert kinds == {MemoryKind.PROJECT, MemoryKind.FEEDBACK}
    index = (directory / "MEMORY.md").read_text().splitlines()
    assert sorted(pointer_file(ln) or "" for ln in index) == sorted(topics)
    assert stat.S_IMODE((directory / "MEMORY.md").stat().st_mode) == 0o600
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700

    # Idempotent: nothing changed, nothing written, imported or removed.
    again = sync_claude(engine_ctx, "acme", WORKDIR)
    assert (again.written, again.imported, again.removed) == ([], [], [])
    assert _topics(directory) == topics

    # The agent changes the deploy fact and writes a memory of its own.
    [deploy_file] = [n for n, t in topics.items() if "Thursdays" in t]
    edited = topics[deploy_file].replace("on Thursdays at 10:00", "on Fridays at 10:00")
    (directory / deploy_file).write_text(edited)
    (directory / "staging-host.md").write_text(
        "---\nname: staging-host\ndescription: where staging runs\nmetadata:\n  type: reference\n"
        "---\n\nStaging runs on staging-1.acme.internal, see https://wiki.acme.test/staging\n"
    )
    engine_ctx.clock = lambda: T0 + timedelta(days=2)
    third = sync_claude(engine_ctx, "acme", WORKDIR)
    assert third.kept_edits == [deploy_file]
    assert len(third.imported) == 2
    assert deploy.id in third.superseded  # the edit replaced the old fact (supersede applied)
    current = _current_texts(engine_ctx)
    assert deploy.id not in current
    assert any("Fridays" in t for t in current.values())
    assert any("staging-1.acme.internal" in t for t in current.values())
    chain = history(engine_ctx, "acme", deploy.id)
    assert chain[0].status is Status.RETIRED and chain[0].superseded_by in third.imported
    # Kept as written: the edited file and the agent's file are untouched, not duplicated.
    assert (directory / deploy_file).read_text() == edited
    assert len(_topics(directory)) == 3
    index = (directory / "MEMORY.md").read_text()
    assert "staging-host.md" in index and deploy_file in index

    fourth = sync_claude(engine_ctx, "acme", WORKDIR)
    assert (fourth.written, fourth.imported, fourth.removed) == ([], [], [])


def test_retired_memory_file_removed_and_hand_edit_kept(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    gone = _add(engine_ctx, "The office wifi network is called acme-guest")
    kept = _add(engine_ctx, "The billing service is owned by Alice Martin")
    directory = memory_dir("acme", WORKDIR, engine_ctx.settings.roots)
    sync_claude(engine_ctx, "acme", WORKDIR)
    by_text = {t: n for n, t in _topics(directory).items()}
    gone_file = next(n for t, n in by_text.items() if "acme-guest" in t)
    kept_file = next(n for t, n in by_text.items() if "Alice" in t)
    # A person edits one file by hand, and adds a line of their own to the index.
    hand = "Billing is owned by Alice Martin; Bob Chen is her backup on call\n"
    (directory / kept_file).write_text(hand)
    with (directory / "MEMORY.md").open("a") as fh:
        fh.write("Always answer in British English\n")
    retire(engine_ctx, "acme", Layer.SEMANTIC, gone.id, None, "obsolete")
    report = sync_claude(engine_ctx, "acme", WORKDIR)
    assert report.removed == [gone_file] and not (directory / gone_file).exists()
    assert (directory / kept_file).read_text() == hand  # never overwritten
    assert report.kept_edits == [kept_file]
    texts = _current_texts(engine_ctx).values()
    assert any("Bob Chen" in t for t in texts)
    assert any("British English" in t for t in texts)
    index = (directory / "MEMORY.md").read_text().splitlines()
    assert index[0] == "Always answer in British English"  # the person's line first, kept
    assert kept.id not in {pointer_file(ln) for ln in index}
    again = sync_claude(engine_ctx, "acme", WORKDIR)
    assert (again.imported, again.written) == ([], [])  # the line is imported once


def test_index_stays_within_200_lines(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    # Short facts (~100-character pointers): the 200 lines run out before 25,000 characters.
    make_tenant("acme")
    reqs = [
        RememberRequest(
            tenant_id="acme",
            text=f"Customer {i} pays in region R{i}",
            meta=NikaMeta(timestamp=T0 + timedelta(minutes=i), project_id="web"),
        )
        for i in range(230)
    ]
    outcomes = ingest_batch(engine_ctx, reqs)
    assert all(isinstance(o, IngestOutcome) for o in outcomes)
    directory = memory_dir("acme", WORKDIR, engine_ctx.settings.roots)
    report = sync_claude(engine_ctx, "acme", WORKDIR)
    index = (directory / "MEMORY.md").read_text()
    lines = index.splitlines()
    assert len(lines) == INDEX_MAX_LINES
    assert js_length(index.strip()) < INDEX_MAX_CHARS
    assert lines[-1] == f"- ({230 - (INDEX_MAX_LINES - 1)} more memories are not indexed)"
    assert len(_topics(directory)) == INDEX_MAX_LINES - 1 == len(report.written)
    assert report.not_indexed == 230 - (INDEX_MAX_LINES - 1)
    # The newest memories are the ones indexed.
    bodies = "\n".join(_topics(directory).values())
    assert "in region R229\n" in bodies and "in region R0\n" not in bodies


def test_index_of_long_facts_stays_within_25000_characters(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    # Facts of ~200 characters: 230 pointers would be ~31,500 characters, past Claude's cap.
    make_tenant("acme")
    tail = "invoiced monthly through the regional billing desk, with a purchase order number"
    reqs = [
        RememberRequest(
            tenant_id="acme",
            text=f"Customer account number {i} of the web project, based in region R{i}, is {tail}",
            meta=NikaMeta(timestamp=T0 + timedelta(minutes=i), project_id="web"),
        )
        for i in range(230)
    ]
    assert all(isinstance(o, IngestOutcome) for o in ingest_batch(engine_ctx, reqs))
    directory = memory_dir("acme", WORKDIR, engine_ctx.settings.roots)
    report = sync_claude(engine_ctx, "acme", WORKDIR)
    index = (directory / "MEMORY.md").read_text()
    lines = index.splitlines()
    assert js_length(index.strip()) <= INDEX_MAX_CHARS
    assert len(lines) < INDEX_MAX_LINES  # the characters ran out before the lines
    pointed = [pointer_file(ln) for ln in lines[:-1]]
    # Only what the index points to gets a file (decision 122): no unindexed topic files.
    assert sorted(pointed) == sorted(_topics(directory)) == sorted(report.written)
    assert lines[-1] == f"- ({230 - len(pointed)} more memories are not indexed)"
    assert report.not_indexed == 230 - len(pointed)
    again = sync_claude(engine_ctx, "acme", WORKDIR)
    assert (again.written, again.removed) == ([], [])
    assert (directory / "MEMORY.md").read_text() == index


def test_codex_agents_md_block(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    _add(engine_ctx, "The web app deploys to production on Thursdays at 10:00")
    path = agents_md("acme", engine_ctx.settings.roots)
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text("# House rules\nRun the tests before you push.\n")
    first = sync_codex(engine_ctx, "acme")
    text = path.read_text()
    assert text.startswith("# House rules\nRun the tests before you push.\n")  # the person's
    assert BEGIN in text and END in text and "Thursdays" in text
    assert len(first.written) == 1
    # Someone adds a line inside the block: imported, kept; outside text untouched.
    path.write_text(text.replace(END, "- The staging database is restored every Monday\n" + END))
    second = sync_codex(engine_ctx, "acme")
    assert len(second.imported) == 1
    assert "restored every Monday" in path.read_text()
    assert any("every Monday" in t for t in _current_texts(engine_ctx).values())
    third = sync_codex(engine_ctx, "acme")
    assert (third.imported, third.written, third.removed) == ([], [], [])
    manifest = json.loads(next(engine_ctx.settings.data_root.rglob("codex-all.json")).read_text())
    assert len(manifest["files"]) == 2


def test_opencode_global_agents_md_block(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig]
) -> None:
    # OpenCode reads {OPENCODE_CONFIG_DIR}/AGENTS.md (the tenant's own), not the repo's file.
    make_tenant("acme")
    _add(engine_ctx, "The web app deploys to production on Thursdays at 10:00")
    path = opencode_agents_md("acme", engine_ctx.settings.roots)
    assert path.parent.name == "opencode" and path.name == "AGENTS.md"
    first = sync_opencode(engine_ctx, "acme")
    text = path.read_text()
    assert BEGIN in text and END in text and "Thursdays" in text and len(first.written) == 1
    assert path.stat().st_mode & 0o077 == 0 and path.parent.stat().st_mode & 0o077 == 0
    # The agent (or a person) adds a line: imported as OpenCode's, kept; a second pass is quiet.
    path.write_text(
        "Use pnpm, not npm.\n" + text.replace(END, "- Staging resets on Mondays\n" + END)
    )
    second = sync_opencode(engine_ctx, "acme")
    assert len(second.imported) == 1 and path.read_text().startswith("Use pnpm, not npm.\n")
    records = {
        r.text: r
        for r in (
            MemoryRecord.from_payload(dict(p.payload))
            for p in engine_ctx.vectors.scroll("acme", Layer.SEMANTIC, PointFilter())
        )
    }
    assert records["Staging resets on Mondays"].meta.agent_type == "opencode"
    again = sync_opencode(engine_ctx, "acme")
    assert (again.imported, again.written, again.removed) == ([], [], [])


@pytest.mark.parametrize("cli", ["codex", "gemini", "opencode"])
def test_a_retired_memory_leaves_the_instruction_files_block(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig], cli: str
) -> None:
    # Codex's AGENTS.md, Gemini CLI's GEMINI.md and OpenCode's global AGENTS.md: the block
    # holds current facts only; a retirement takes its line out at the next pass.
    make_tenant("acme")
    sync, path = {
        "codex": (sync_codex, agents_md), "gemini": (sync_gemini, gemini_md),
        "opencode": (sync_opencode, opencode_agents_md),
    }[cli]  # fmt: skip
    kept = _add(engine_ctx, "The web app deploys to production on Thursdays at 10:00")
    gone = _add(engine_ctx, "The nightly export job writes to bucket acme-exports-eu")
    sync(engine_ctx, "acme")
    before = path("acme", engine_ctx.settings.roots).read_text()
    assert "Thursdays" in before and "acme-exports-eu" in before
    retire(engine_ctx, "acme", Layer.SEMANTIC, gone.id, None, "the export job was removed")
    sync(engine_ctx, "acme")
    after = path("acme", engine_ctx.settings.roots).read_text()
    assert "Thursdays" in after and "acme-exports-eu" not in after
    assert {kept.id} <= set(_current_texts(engine_ctx))
