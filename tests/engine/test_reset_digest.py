"""After a fresh start: the digests are memories of the new store, and the theme files say what
they hold (front matter asserted against the seeded history)."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.memory import Layer
from nika_tui.domain.requests import RecallQuery, RememberRequest
from nika_tui.engine.context import EngineContext
from nika_tui.engine.history import history
from nika_tui.engine.ingest import ingest
from nika_tui.engine.recall import recall
from nika_tui.engine.reset import reset
from nika_tui.services.config_store import load_tenant, save_tenant
from tests.engine.strategy_a_seed import QUERIES, seed_history

pytestmark = pytest.mark.embedder
TENANT = "acme"


def _payloads(ctx: EngineContext) -> dict[str, dict[str, Any]]:
    return {str(p.id): p.payload for layer in Layer for p in ctx.vectors.scroll(TENANT, layer)}


def _front(path: Path) -> dict[str, Any]:
    _, front, _ = path.read_text().split("---\n", 2)
    return dict(yaml.safe_load(front))


def test_digests_are_memories_and_themes_say_what_they_hold(
    engine_ctx: EngineContext,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    make_tenant(TENANT)
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    save_tenant(load_tenant(TENANT).model_copy(update={"knowledge_repo": str(repo)}))
    seeded = seed_history(engine_ctx, TENANT)
    old = _payloads(engine_ctx)
    reset(engine_ctx, TENANT)

    # Digests: episodic memories of the fresh store, each naming the old memories it condenses.
    digests = [p for p in _payloads(engine_ctx).values() if p.get("kind") == "digest"]
    assert digests
    for d in digests:
        assert d["layer"] == "episodic" and d["condenses"]
        assert set(d["condenses"]) <= set(old)
    projects = {d["project_id"] for d in digests}
    assert {"infra", "shop"} <= projects  # one per project with enough memories

    # Themes: front matter against the seeded memories.
    fronts = {p: _front(p) for p in sorted((repo / "knowledge").glob("*/*.md"))
              if p.parent.name != "digest"}  # fmt: skip
    by_member = {m: f for f in fronts.values() for m in f["memories"]}
    for f in fronts.values():
        members = [old[m] for m in f["memories"]]
        assert f["scope"] in {"infra", "shop"}
        assert {m["project_id"] for m in members} == {f["scope"]}
        assert all(m["status"] == "current" for m in members)
        newest = max(datetime.fromisoformat(m["valid_from"]) for m in members)
        assert datetime.fromisoformat(f["recency"]) == newest
        assert 0.0 <= f["confidence"] <= 1.0
    # Related memories join (the web server's two ports; the rounding fact's three re-records
    # fold into it, their ids kept in `condenses`), distinct ones stay apart even within one job.
    rounding = {seeded.ids["rounding"], *seeded.duplicates[:3]}
    folded = [f for f in fronts.values() if set(f["memories"]) & rounding]
    assert len(folded) == 1 and set(folded[0]["memories"]) | set(folded[0]["condenses"]) == rounding
    assert len(folded[0]["memories"]) == 1
    ports = [m for m, p in old.items() if p["text"].startswith("The web server")]
    assert len(ports) == 2 and by_member[ports[0]] is by_member[ports[1]]
    stripe = next(m for m, p in old.items() if p["text"] == QUERIES[1][1])
    backups = next(m for m, p in old.items() if p["text"].startswith("Database backups"))
    assert by_member[stripe] is not folded[0]  # same job, apart
    assert by_member[backups] is not by_member[seeded.ids["gamma"]]  # same job, apart
    assert not set(by_member) & set(seeded.retired)  # themes hold current memories only


def test_a_digest_is_retired_when_a_fact_it_condenses_is_replaced(
    engine_ctx: EngineContext,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    make_tenant(TENANT)
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    save_tenant(load_tenant(TENANT).model_copy(update={"knowledge_repo": str(repo)}))
    seeded = seed_history(engine_ctx, TENANT)
    reset(engine_ctx, TENANT)
    gamma = seeded.ids["gamma"]
    digests = [p for p in _payloads(engine_ctx).values() if p.get("kind") == "digest"]
    stale = {d["id"] for d in digests if gamma in d["condenses"]}
    others = {d["id"] for d in digests} - stale
    assert stale and others  # the infra digests quote gamma; the shop ones do not

    # The real engine: ingest, candidates, the tenant's judge, retire.
    when = datetime(2026, 12, 1, 9, tzinfo=UTC)
    done = ingest(engine_ctx, RememberRequest(
        tenant_id=TENANT, text="The staging server is now delta.internal",
        meta=NikaMeta(timestamp=when, project_id="infra", job_id="migrate"),
    ))  # fmt: skip
    assert gamma in done.retired

    after = _payloads(engine_ctx)
    for digest_id in stale:
        assert after[digest_id]["status"] == "retired"
        assert gamma in after[digest_id]["retire_reason"]
        assert done.id in after[digest_id]["retire_reason"]
        assert after[digest_id].get("superseded_by") is None  # not a version of the new fact
    assert all(after[d]["status"] == "current" for d in others)
    # Nothing current still says gamma: the recall finds the new fact, not a stale digest.
    hits = recall(engine_ctx, RecallQuery(tenant_id=TENANT, query="where is the staging server"))
    assert hits.hits and all("gamma.internal" not in h.record.text for h in hits.hits)
    assert [r.id for r in history(engine_ctx, TENANT, done.id)] == [gamma, done.id]
