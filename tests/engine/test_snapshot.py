"""`nika snapshot export|import`: a full, checksummed, restorable copy of a tenant's memory."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from nika_tui.cli import main
from nika_tui.domain.memory import Layer
from nika_tui.domain.requests import RecallQuery
from nika_tui.engine.context import EngineContext
from nika_tui.engine.recall import recall
from nika_tui.engine.snapshot import export_snapshot, import_snapshot
from nika_tui.errors import SnapshotInvalid, ValidationFailed
from nika_tui.services import redis_keys
from tests.engine.strategy_a_seed import QUERIES, seed_history

pytestmark = pytest.mark.embedder
TENANT = "acme"


def _answers(ctx: EngineContext) -> list[list[tuple[str, float]]]:
    """Top-k ids with their dense cosine, per query. Exact duplicates tie, and Qdrant breaks a
    tie by insertion order, which moves their fused (rank) scores: so ids and cosines are
    compared as a set per query, not as a ranked list."""
    return [
        sorted(
            (h.record.id, h.cosine)
            for h in recall(ctx, RecallQuery(tenant_id=TENANT, query=q)).hits
        )
        for q, _ in QUERIES
    ]


def test_import_into_an_empty_store_gives_the_same_recall(
    engine_ctx: EngineContext,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    from nika_tui.services.vectors.edge import EdgeVectorStore

    make_tenant(TENANT)
    seeded = seed_history(engine_ctx, TENANT)
    before = _answers(engine_ctx)
    snap = tmp_path / "snap"
    out = export_snapshot(engine_ctx, TENANT, snap)
    assert out["points"] == seeded.live
    assert stat.S_IMODE(snap.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in snap.iterdir()} == {0o600}
    hierarchy = engine_ctx.hierarchy(TENANT).path.read_text()
    reviews = engine_ctx.redis.hgetall(redis_keys.review_queue(TENANT))

    # A new, empty store and an emptied Redis queue / hierarchy: import brings everything back.
    fresh = EdgeVectorStore(tmp_path / "fresh-qdrant", 384, flush_writes=False)
    engine_ctx.redis.delete(redis_keys.review_queue(TENANT))
    engine_ctx.hierarchy(TENANT).path.unlink()
    ctx2 = EngineContext(settings=engine_ctx.settings,
                         child_env=engine_ctx.child_env, secrets_env=engine_ctx.secrets_env,
                         redis=engine_ctx.redis, vectors=fresh,
                         embedder=engine_ctx.embedder)  # fmt: skip
    try:
        result = import_snapshot(ctx2, TENANT, snap)
        assert result["points"] == seeded.live and result["hierarchy"] == "restored"
        assert _answers(ctx2) == before  # same top-k ids and scores
        assert engine_ctx.hierarchy(TENANT).path.read_text() == hierarchy
        assert engine_ctx.redis.hgetall(redis_keys.review_queue(TENANT)) == reviews
        retired = fresh.retrieve(TENANT, Layer.SEMANTIC, seeded.retired)
        assert {p.payload["status"] for p in retired} == {"retired"}  # both statuses kept
        # A non-empty store is refused unless told.
        with pytest.raises(ValidationFailed, match="already holds memories"):
            import_snapshot(ctx2, TENANT, snap)
        assert import_snapshot(ctx2, TENANT, snap, force=True)["points"] == seeded.live
    finally:
        fresh.close()


def test_bad_checksum_is_refused_and_nothing_is_written(
    engine_ctx: EngineContext,
    make_tenant,
    tmp_path: Path,
    capsys,  # type: ignore[no-untyped-def]
) -> None:
    make_tenant(TENANT)
    seed_history(engine_ctx, TENANT)
    snap = tmp_path / "snap"
    export_snapshot(engine_ctx, TENANT, snap)
    data = bytearray((snap / "semantic.f32").read_bytes())
    data[100] ^= 0xFF
    (snap / "semantic.f32").write_bytes(bytes(data))
    make_tenant("other")
    with pytest.raises(SnapshotInvalid, match=r"bad checksum for semantic\.f32"):
        import_snapshot(engine_ctx, TENANT, snap, force=True)
    engine_ctx.vectors.close()  # the CLI opens the store itself (no service running)
    assert main(["snapshot", "import", "--tenant", "other", str(snap)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: snapshot") and err[1].startswith("hint:")
    assert all(engine_ctx.vectors.count("other", layer) == 0 for layer in Layer)


def test_cli_export_refuses_an_existing_directory(
    engine_ctx: EngineContext,
    make_tenant,
    tmp_path: Path,
    capsys,  # type: ignore[no-untyped-def]
) -> None:
    make_tenant(TENANT)
    seed_history(engine_ctx, TENANT)
    engine_ctx.vectors.close()
    target = tmp_path / "taken"
    target.mkdir()
    (target / "x").write_text("mine")
    assert main(["snapshot", "export", "--tenant", TENANT, str(target)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert os.listdir(target) == ["x"]


def test_recall_settings_travel_with_the_snapshot(
    engine_ctx: EngineContext,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    from nika_tui.domain.recall_params import RecallParams
    from nika_tui.engine.debt.actions import boost_recency
    from nika_tui.services.recall_params import adopt_params, params_key, read_params
    from nika_tui.services.vectors.edge import EdgeVectorStore

    make_tenant(TENANT)
    seed_history(engine_ctx, TENANT)
    tuned = RecallParams(palace_floor=0.31, dense_weight=0.5, recency_weight=0.2, hnsw_ef=96)
    adopt_params(engine_ctx.redis, TENANT, tuned, "2026-12-01T09:00:00+00:00")
    boost_recency(engine_ctx, TENANT)  # the debt action's hash
    keys = (params_key(TENANT), redis_keys.recall_tuning(TENANT))
    saved = [engine_ctx.redis.hgetall(k) for k in keys]
    assert all(saved)
    before = _answers(engine_ctx)  # ranked with the tuned parameters
    snap = tmp_path / "snap"
    export_snapshot(engine_ctx, TENANT, snap)
    assert "recall_settings.json" in json.loads((snap / "manifest.json").read_text())["files"]

    # Another machine: an empty store, no settings. Import puts the tuned ones back in force.
    engine_ctx.redis.delete(*keys)
    assert read_params(engine_ctx.redis, TENANT) == (RecallParams(), False)
    fresh = EdgeVectorStore(tmp_path / "fresh-qdrant", 384, flush_writes=False)
    ctx2 = EngineContext(settings=engine_ctx.settings,
                         child_env=engine_ctx.child_env, secrets_env=engine_ctx.secrets_env,
                         redis=engine_ctx.redis, vectors=fresh,
                         embedder=engine_ctx.embedder)  # fmt: skip
    try:
        assert import_snapshot(ctx2, TENANT, snap)["recall_settings"] == "restored"
        assert [engine_ctx.redis.hgetall(k) for k in keys] == saved
        assert read_params(engine_ctx.redis, TENANT) == (tuned.clamped(), True)
        assert _answers(ctx2) == before
        # A tenant that has settings of its own keeps them unless told (--force).
        engine_ctx.redis.hset(keys[0], "palace_floor", "0.5")
        result = import_snapshot(ctx2, TENANT, snap, force=True)
        assert result["recall_settings"] == "restored"
        assert [engine_ctx.redis.hgetall(k) for k in keys] == saved
    finally:
        fresh.close()
    engine_ctx.redis.hset(keys[0], "palace_floor", "0.5")
    empty = EdgeVectorStore(tmp_path / "empty-qdrant", 384, flush_writes=False)
    ctx3 = EngineContext(settings=engine_ctx.settings,
                         child_env=engine_ctx.child_env, secrets_env=engine_ctx.secrets_env,
                         redis=engine_ctx.redis, vectors=empty,
                         embedder=engine_ctx.embedder)  # fmt: skip
    try:
        assert import_snapshot(ctx3, TENANT, snap)["recall_settings"] == "kept"
        assert engine_ctx.redis.hget(keys[0], "palace_floor") == "0.5"
    finally:
        empty.close()
