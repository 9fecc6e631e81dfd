"""Compression into the knowledge trees: bad repos, determinism, visibility, the service path."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nika_tui.domain.sensitivity import RepoVisibility
from nika_tui.engine.compress import compress
from nika_tui.engine.context import EngineContext
from nika_tui.engine.reset import reset
from nika_tui.errors import ValidationFailed
from nika_tui.services.config_store import load_tenant, save_tenant
from nika_tui.settings import Settings
from tests.engine.strategy_a_seed import PRIVATE_TEXTS, seed_history

pytestmark = pytest.mark.embedder
TENANT = "acme"


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("knowledge/**/*.*"))}


def test_not_a_work_tree_is_one_error_and_the_store_is_untouched(
    engine_ctx: EngineContext,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    make_tenant(TENANT)
    seeded = seed_history(engine_ctx, TENANT)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("mine")
    with pytest.raises(ValidationFailed) as err:
        reset(engine_ctx, TENANT, notes)
    assert err.value.message == f"{notes} is not a git work tree"
    assert f"git init {notes}" in err.value.hint
    assert sorted(p.name for p in notes.iterdir()) == ["todo.txt"]
    assert engine_ctx.vectors.generation(TENANT) is None  # type: ignore[attr-defined]
    assert sum(engine_ctx.vectors.count(TENANT, layer) for layer in ("semantic", "episodic")) == (  # type: ignore[arg-type]
        seeded.live
    )


def test_same_store_same_files(
    engine_ctx: EngineContext,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    make_tenant(TENANT)
    seed_history(engine_ctx, TENANT)
    compress(engine_ctx, TENANT, tmp_path / "one")
    compress(engine_ctx, TENANT, tmp_path / "two")
    one, two = _tree(tmp_path / "one"), _tree(tmp_path / "two")
    assert one == two and any(name.startswith("knowledge/digest/") for name in one)
    topic = next(
        text for name, text in one.items() if name.endswith(".md") and "digest" not in name
    )
    for key in ("entity_type:", "scope:", "recency:", "confidence:", "memories:"):
        assert key in topic


def test_a_private_repo_receives_everything(
    engine_ctx: EngineContext,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    make_tenant(TENANT)
    config = load_tenant(TENANT)
    save_tenant(config.model_copy(update={"knowledge_repo_visibility": RepoVisibility.PRIVATE}))
    seed_history(engine_ctx, TENANT)
    result = compress(engine_ctx, TENANT, tmp_path / "repo")
    assert result.private is None
    text = "".join(_tree(tmp_path / "repo").values())
    assert all(t in text for t in PRIVATE_TEXTS)


def test_escalated_reset_runs_in_the_service_once_approved(
    running_service,
    engine_ctx: EngineContext,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    from nika_tui.domain.tenant import AutoMode
    from nika_tui.engine.kernels.confirmations import resolve
    from nika_tui.engine.reset_trigger import decide_reset

    make_tenant(TENANT)
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    config = load_tenant(TENANT)
    actions = config.auto_actions.model_copy(update={"compress": AutoMode.ESCALATE})
    save_tenant(config.model_copy(update={"knowledge_repo": str(repo), "auto_actions": actions}))
    seeded = seed_history(engine_ctx, TENANT)
    entry = decide_reset(engine_ctx, TENANT, [{"indicator": "judge_disagreement",
                                                "available": ["A"]}])  # fmt: skip
    assert entry is not None and engine_ctx.vectors.generation(TENANT) is None  # type: ignore[attr-defined]
    done = resolve(
        engine_ctx.redis,
        TENANT,
        entry["confirmation_id"],
        approve=True,
        settings=Settings.from_env(),
    )
    result = done["result"]
    assert done["status"] == "approved"
    assert result["live_points_after"] < result["live_points_before"] == seeded.live
    stats = running_service.client.call("stats", {"tenant_id": TENANT})["tenants"][TENANT]
    assert stats["semantic"]["retired"] == 0 and stats["semantic"]["current"] > 0
    hits = running_service.client.call(
        "recall", {"tenant_id": TENANT, "query": "where is the staging server"}
    )["hits"]
    assert hits[0]["record"]["id"] == seeded.ids["gamma"]
