"""`nika snapshot export|import|history` as a person runs them: a subprocess without the service,
and the same ops through a running service (RPC ``snapshot.export`` / ``snapshot.import``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from nika_tui.domain.memory import Layer
from nika_tui.engine.context import EngineContext
from nika_tui.paths import data_dir
from nika_tui.services.vectors.edge import EdgeVectorStore
from nika_tui.settings import Settings
from tests.engine.strategy_a_seed import seed_history

pytestmark = pytest.mark.embedder
TENANT = "acme"


def _nika(*argv: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "nika_tui", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "NIKA_NO_AUTOSTART": "1"},
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_cli_export_import_and_history_without_the_service(
    make_tenant,
    redis_url: str,
    embedder,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    make_tenant(TENANT)
    # Seeded where the CLI opens the embedded store, then closed: the CLI runs it locally.
    store = EdgeVectorStore(data_dir() / "qdrant", 384, flush_writes=False)
    ctx = EngineContext(settings=Settings.from_env(),
                        redis=redis.Redis.from_url(redis_url, decode_responses=True),
                        vectors=store, embedder=embedder)  # fmt: skip
    seeded = seed_history(ctx, TENANT)
    store.close()
    snap = tmp_path / "snap"
    out = _nika("snapshot", "export", "--tenant", TENANT, str(snap), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["points"] == seeded.live
    assert (snap / "manifest.json").is_file()

    refused = _nika("snapshot", "import", "--tenant", TENANT, str(snap))
    assert refused.returncode == 2 and "already holds memories" in refused.stderr
    done = _nika("snapshot", "import", "--tenant", TENANT, str(snap), "--force", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["points"] == seeded.live

    # The moved server's chain, oldest first, retired links included.
    hist = _nika("snapshot", "history", str(snap), seeded.ids["gamma"], "--json")
    assert hist.returncode == 0, hist.stderr
    chain = json.loads(hist.stdout)["records"]
    assert [p["status"] for p in chain] == ["retired", "retired", "current"]
    assert chain[-1]["id"] == seeded.ids["gamma"]
    assert {p["id"] for p in chain[:2]} <= set(seeded.retired)
    text = _nika("snapshot", "history", str(snap), seeded.ids["gamma"])
    assert text.stdout.splitlines()[-1].startswith("* ")


def test_export_and_import_through_the_running_service(
    running_service,
    engine_ctx: EngineContext,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    make_tenant(TENANT)
    seeded = seed_history(engine_ctx, TENANT)
    snap = tmp_path / "snap"
    client = running_service.client
    exported = client.call("snapshot.export", {"tenant_id": TENANT, "path": str(snap)})
    assert exported["points"] == seeded.live
    # The service holds this store; a CLI that ran locally would import into the empty
    # data-dir store instead, and gamma would stay deleted here.
    engine_ctx.vectors.delete(TENANT, Layer.SEMANTIC, [seeded.ids["gamma"]])
    out = _nika("snapshot", "import", "--tenant", TENANT, str(snap), "--force", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["points"] == seeded.live
    back = engine_ctx.vectors.retrieve(TENANT, Layer.SEMANTIC, [seeded.ids["gamma"]])
    assert [p.id for p in back] == [seeded.ids["gamma"]]
    again = client.call("snapshot.import", {"tenant_id": TENANT, "path": str(snap), "force": True})
    assert again["points"] == seeded.live
