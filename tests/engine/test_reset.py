"""Strategy A end to end: `compress --reset` keeps current facts findable with fewer points."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from nika_tui.domain.memory import Layer, Status
from nika_tui.domain.ports import PointFilter
from nika_tui.engine.context import EngineContext
from nika_tui.engine.reset import reset
from nika_tui.engine.snapshot.restore import snapshot_history
from nika_tui.services.config_store import load_tenant, save_tenant
from tests.engine.strategy_a_seed import PRIVATE_TEXTS, recall_at_5, seed_history

pytestmark = pytest.mark.embedder
TENANT = "acme"


def _live(ctx: EngineContext) -> int:
    return sum(ctx.vectors.count(TENANT, layer) for layer in Layer)


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def tenant_with_remote(make_tenant, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    """The tenant, its knowledge repo a clone of a bare remote (public by default)."""
    make_tenant(TENANT)
    remote = tmp_path / "remote.git"
    _git("init", "-q", "--bare", str(remote))
    work = tmp_path / "knowledge"
    _git("clone", "-q", str(remote), str(work))
    config = load_tenant(TENANT).model_copy(update={"knowledge_repo": str(work)})
    save_tenant(config)
    return remote


def test_reset_keeps_current_facts_with_fewer_points(
    engine_ctx: EngineContext, tenant_with_remote: Path
) -> None:
    seeded = seed_history(engine_ctx, TENANT)
    before_recall = recall_at_5(engine_ctx, TENANT)
    before_live = _live(engine_ctx)
    result = reset(engine_ctx, TENANT)

    assert result["live_points_before"] == before_live == seeded.live
    assert _live(engine_ctx) == result["live_points_after"] < before_live
    assert before_recall == 1.0  # measured before: every fixed query finds its fact
    assert recall_at_5(engine_ctx, TENANT) == before_recall
    # Retired facts are not current any more, nor stored at all in the fresh generation.
    assert engine_ctx.vectors.retrieve(TENANT, Layer.SEMANTIC, seeded.retired) == []
    assert engine_ctx.vectors.count(TENANT, Layer.SEMANTIC, PointFilter(
        equals={"status": Status.RETIRED.value})) == 0  # fmt: skip
    # Their supersede chain is in the snapshot: alpha → beta → gamma.
    chain = snapshot_history(Path(result["snapshot"]["path"]), seeded.ids["beta"])
    assert [p["id"] for p in chain] == [
        seeded.ids["alpha"],
        seeded.ids["beta"],
        seeded.ids["gamma"],
    ]
    # The old shards were retired, not deleted; the pointer names the new generation.
    assert (engine_ctx.vectors.root / TENANT / "semantic").is_dir()  # type: ignore[attr-defined]
    assert engine_ctx.vectors.generation(TENANT) == result["generation"]  # type: ignore[attr-defined]
    # Published: the remote has the commit, and no private memory reached it (public repo).
    pushed = _git("--git-dir", str(tenant_with_remote), "log", "--format=%H", "-1").strip()
    assert pushed == result["compress"]["commit"]
    files = _git("--git-dir", str(tenant_with_remote), "ls-tree", "-r", "--name-only", "HEAD")
    remote_text = "".join(
        _git("--git-dir", str(tenant_with_remote), "show", f"HEAD:{f}") for f in files.split()
    )
    assert "staging server moved to gamma.internal" in remote_text
    for text in PRIVATE_TEXTS:
        assert text not in remote_text
    assert seeded.ids["private"] not in remote_text and seeded.ids["secret"] not in remote_text
    private = result["compress"]["private"]
    assert private and private["memories"] == 2
    # Private facts stay findable after the reset (re-ingested from the local private tree).
    journal = json.loads(
        (Path(result["snapshot"]["path"]).parent.parent / "reset.json").read_text()
    )
    assert journal["stage"] == "done"


def test_second_reset_builds_on_the_first(
    engine_ctx: EngineContext, tenant_with_remote: Path
) -> None:
    seed_history(engine_ctx, TENANT)
    first = reset(engine_ctx, TENANT)
    second = reset(engine_ctx, TENANT)
    assert second["previous_generation"] == first["generation"]
    assert recall_at_5(engine_ctx, TENANT) == 1.0
    assert second["live_points_after"] <= first["live_points_after"]


def test_refused_push_leaves_the_store_untouched(
    engine_ctx: EngineContext, tenant_with_remote: Path
) -> None:
    from nika_tui.errors import PublishFailed

    seeded = seed_history(engine_ctx, TENANT)
    hook = tenant_with_remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'pushes are closed' >&2\nexit 1\n")
    hook.chmod(0o755)
    with pytest.raises(PublishFailed) as err:
        reset(engine_ctx, TENANT)
    assert "push failed" in err.value.message and "\n" not in err.value.message
    assert "the memory store is unchanged" in err.value.hint
    assert engine_ctx.vectors.generation(TENANT) is None  # type: ignore[attr-defined]
    assert _live(engine_ctx) == seeded.live


class _DamagingEmbedder:
    """The real embedder; its first call damages the reset's snapshot, as a failing disk would
    while the fresh store is being built (after the snapshot was written, before the switch)."""

    def __init__(self, real: Any, snapshots: Path) -> None:
        self.real, self.snapshots, self.done = real, snapshots, False
        self.dimension, self.name = real.dimension, real.name

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not self.done:
            (vectors,) = self.snapshots.glob("*/semantic.f32")
            with vectors.open("r+b") as fh:
                fh.write(b"\x00\x00\x80\x7f")  # one float flipped to +inf
            self.done = True
        return self.real.embed(texts)


def test_a_damaged_snapshot_stops_the_reset_before_the_switch(
    engine_ctx: EngineContext, tenant_with_remote: Path
) -> None:
    from nika_tui.engine.snapshot.format import SnapshotInvalid

    seeded = seed_history(engine_ctx, TENANT)
    snapshots = engine_ctx.settings.roots.tenant_data_dir(TENANT) / "snapshots"
    ctx = dataclasses.replace(
        engine_ctx, embedder=_DamagingEmbedder(engine_ctx.embedder, snapshots)
    )
    with pytest.raises(SnapshotInvalid) as err:
        reset(ctx, TENANT)
    assert "bad checksum for semantic.f32" in err.value.message and "\n" not in err.value.message
    assert "the memory store is unchanged" in err.value.hint
    assert engine_ctx.vectors.generation(TENANT) is None  # type: ignore[attr-defined]
    assert _live(engine_ctx) == seeded.live
    assert recall_at_5(engine_ctx, TENANT) == 1.0
