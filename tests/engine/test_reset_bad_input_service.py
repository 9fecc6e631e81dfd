"""Bad input for strategy A through a running memory service (issue 22; decision 486).

`nika compress --reset` runs in the service, which holds the reset tenant's writes while its
reset runs and says so (decision 505). A bad input must be refused before anything is paused: the
person sees one `error:` line and one `hint:` line, not a pause note first; no reset journal
is written (the journal and the writes-paused mark are written together, at the first stage);
the store is untouched. The CLI is a real subprocess talking to the real service.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from nika_tui.cli.compress import RESET_PAUSE_NOTE
from nika_tui.domain.memory import Layer
from nika_tui.engine.reset import journal_path
from nika_tui.engine.snapshot.export import export_snapshot
from nika_tui.services import redis_keys
from nika_tui.services.config_store import load_tenant, save_tenant
from tests.engine.strategy_a_seed import seed_history
from tests.helpers import retry_until
from tests.plugins.memory import RunningService

pytestmark = pytest.mark.embedder
TENANT = "acme"


def _nika(*argv: str, stderr: Path | None = None) -> subprocess.Popen[str]:
    """``nika argv`` as a person runs it; its stderr into ``stderr`` when given (read live)."""
    with (stderr or Path(os.devnull)).open("w") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "nika_tui", *argv],
            stdout=subprocess.PIPE,
            stderr=sink if stderr else subprocess.PIPE,
            text=True,
            env={**os.environ, "NIKA_NO_AUTOSTART": "1"},
        )


def _one_error(*argv: str) -> tuple[str, str]:
    """Run ``nika argv``; its stderr must be exactly one error line and one hint line."""
    proc = _nika(*argv)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 2, err  # no pause note, no traceback: the error alone
    assert lines[0].startswith("error: ") and lines[1].startswith("hint: "), err
    return lines[0], lines[1]


def _live(svc: RunningService) -> int:
    return sum(svc.ctx.vectors.count(TENANT, layer) for layer in Layer)


def _nothing_paused(svc: RunningService, live: int) -> None:
    assert not journal_path(TENANT, svc.ctx.settings.roots).exists()  # no stage was reached
    assert svc.ctx.redis.get(redis_keys.WRITES_PAUSED) is None
    assert svc.ctx.vectors.generation(TENANT) is None  # type: ignore[attr-defined]
    assert _live(svc) == live


def test_a_repo_that_is_not_a_work_tree(
    running_service: RunningService,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    svc = running_service
    make_tenant(TENANT)
    live = seed_history(svc.ctx, TENANT).live
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("mine")
    error, hint = _one_error("compress", "--tenant", TENANT, "--repo", str(notes), "--reset")
    assert error == f"error: {notes} is not a git work tree" and f"git init {notes}" in hint
    assert sorted(p.name for p in notes.iterdir()) == ["todo.txt"]
    _nothing_paused(svc, live)


def test_a_tenant_without_a_knowledge_repo(
    running_service: RunningService,
    make_tenant,  # type: ignore[no-untyped-def]
) -> None:
    svc = running_service
    make_tenant(TENANT)  # no knowledge_repo configured
    live = seed_history(svc.ctx, TENANT).live
    error, hint = _one_error("compress", "--tenant", TENANT, "--reset")
    assert error == f"error: tenant {TENANT} has no knowledge repo" and "--repo PATH" in hint
    _nothing_paused(svc, live)


def test_a_snapshot_with_a_bad_checksum(
    running_service: RunningService,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    svc = running_service
    make_tenant(TENANT)
    seeded = seed_history(svc.ctx, TENANT)
    snap = tmp_path / "snap"
    export_snapshot(svc.ctx, TENANT, snap)
    data = bytearray((snap / "semantic.f32").read_bytes())
    data[100] ^= 0xFF
    (snap / "semantic.f32").write_bytes(bytes(data))
    # A point the import would bring back if it wrote anything.
    svc.ctx.vectors.delete(TENANT, Layer.SEMANTIC, [seeded.ids["gamma"]])
    error, hint = _one_error("snapshot", "import", "--tenant", TENANT, str(snap), "--force")
    assert error.startswith(f"error: snapshot {snap}") and "bad checksum for semantic.f32" in error
    assert "nothing was imported" in hint
    assert svc.ctx.vectors.retrieve(TENANT, Layer.SEMANTIC, [seeded.ids["gamma"]]) == []
    _nothing_paused(svc, seeded.live - 1)


def test_a_reset_that_runs_says_writes_wait_while_it_runs(
    running_service: RunningService,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    # The note is not lost with the fix: it comes once the service's writes do wait. The push
    # is held by a real pre-receive hook until the note is on the CLI's stderr.
    svc = running_service
    make_tenant(TENANT)
    bare, release = tmp_path / "origin.git", tmp_path / "release"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\nwhile [ ! -e {release} ]; do sleep 0.05; done\nexit 0\n")
    hook.chmod(stat.S_IRWXU)
    work = tmp_path / "knowledge"
    subprocess.run(["git", "clone", "-q", str(bare), str(work)], check=True, capture_output=True)
    save_tenant(load_tenant(TENANT).model_copy(update={"knowledge_repo": str(work)}))
    seed_history(svc.ctx, TENANT)
    err = tmp_path / "stderr"
    proc = _nika("compress", "--tenant", TENANT, "--reset", stderr=err)
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.communicate(timeout=600)[0]))
    reader.start()
    try:
        retry_until(lambda: RESET_PAUSE_NOTE in err.read_text(), timeout=120, what="the note")
        assert proc.poll() is None  # said while the reset runs, before its result
    finally:
        release.touch()
        reader.join(timeout=600)
    assert proc.returncode == 0, err.read_text()
    assert err.read_text().splitlines() == [RESET_PAUSE_NOTE]
    assert f"{TENANT}: live points" in out[0]
