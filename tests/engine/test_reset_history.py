"""After a fresh start, `nika memory history` / `timeline` of a fact say where its older versions
went: the reset's snapshot, with the command that reads them (issue 22, audit gap 2)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from nika_tui.cli import main
from nika_tui.domain.requests import RecallQuery
from nika_tui.domain.timeline import format_timelines
from nika_tui.engine.reset import reset
from nika_tui.engine.snapshot.restore import snapshot_history
from nika_tui.services.config_store import load_tenant, save_tenant
from tests.engine.strategy_a_seed import seed_history
from tests.plugins.memory import RunningService

pytestmark = pytest.mark.embedder
TENANT = "acme"


def test_history_after_a_reset_names_the_snapshot_of_the_older_versions(
    running_service: RunningService,
    make_tenant,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],  # type: ignore[no-untyped-def]
) -> None:
    svc = running_service
    make_tenant(TENANT)
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    save_tenant(load_tenant(TENANT).model_copy(update={"knowledge_repo": str(repo)}))
    seeded = seed_history(svc.ctx, TENANT)
    gamma = seeded.ids["gamma"]
    before, none = svc.client.history_and_snapshots(TENANT, gamma)
    assert [r.id for r in before] == [seeded.ids["alpha"], seeded.ids["beta"], gamma]
    assert none == []  # nothing was reset yet: the whole chain is in the store

    # The service is idle (nothing queued): the reset runs as its single writer would.
    result = reset(svc.ctx, TENANT)
    snap = result["snapshot"]["path"]
    chain, snapshots = svc.client.history_and_snapshots(TENANT, gamma)
    assert [r.id for r in chain] == [gamma]  # the store holds the current version only
    assert snapshots == [snap]
    assert [p["id"] for p in snapshot_history(Path(snap), gamma)][:2] == [
        seeded.ids["alpha"], seeded.ids["beta"]
    ]  # fmt: skip
    # A fact with no older version names no snapshot.
    ci = next(r for r in svc.client.recall(RecallQuery(
        tenant_id=TENANT, query="where does the CI pipeline run")).hits)  # fmt: skip
    assert svc.client.history_and_snapshots(TENANT, ci.record.id)[1] == []

    assert main(["memory", "history", "--tenant", TENANT, gamma]) == 0
    out = capsys.readouterr().out
    assert f"older versions are in snapshot {snap}: nika snapshot history {snap} {gamma}" in out
    assert main(["memory", "history", "--tenant", TENANT, gamma, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["snapshots"] == [snap]

    timeline = svc.client.timeline(
        RecallQuery(tenant_id=TENANT, query="where is the staging server")
    )
    first = [v["id"] for v in timeline["timelines"][0]]
    assert first == [gamma] and timeline["snapshots"][0] == [snap]
    assert f"nika snapshot history {snap} {gamma}" in "\n".join(format_timelines(timeline))
