"""`nika compress --reset` on bad input, as a person sees it: one `error:` line, one `hint:`
line, exit code 2, no traceback, and the store untouched (a subprocess, no service)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from nika_tui.domain.memory import Layer
from nika_tui.engine.context import EngineContext
from nika_tui.paths import data_dir
from nika_tui.services.config_store import load_tenant, save_tenant
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


def _store() -> EdgeVectorStore:
    return EdgeVectorStore(data_dir() / "qdrant", 384, flush_writes=False)


@pytest.fixture
def seeded_live(make_tenant, redis_url: str, embedder) -> Iterator[int]:  # type: ignore[no-untyped-def]
    """The seeded history where the CLI opens the embedded store; its live point count."""
    make_tenant(TENANT)
    store = _store()
    ctx = EngineContext(settings=Settings.from_env(),
                        redis=redis.Redis.from_url(redis_url, decode_responses=True),
                        vectors=store, embedder=embedder)  # fmt: skip
    live = seed_history(ctx, TENANT).live
    store.close()
    yield live


def _untouched(live: int) -> None:
    store = _store()
    try:
        assert store.generation(TENANT) is None
        assert sum(store.count(TENANT, layer) for layer in Layer) == live
    finally:
        store.close()


def _one_error(proc: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1].startswith("hint: ")
    return lines[0], lines[1]


def test_a_refused_push(seeded_live: int, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    work = tmp_path / "knowledge"
    subprocess.run(["git", "clone", "-q", str(remote), str(work)], check=True)
    save_tenant(load_tenant(TENANT).model_copy(update={"knowledge_repo": str(work)}))
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'pushes are closed' >&2\nexit 1\n")
    hook.chmod(0o755)
    error, hint = _one_error(_nika("compress", "--tenant", TENANT, "--reset"))
    assert "push failed" in error and "the memory store is unchanged" in hint
    _untouched(seeded_live)


def test_a_repo_that_is_not_a_work_tree(seeded_live: int, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("mine")
    proc = _nika("compress", "--tenant", TENANT, "--repo", str(notes), "--reset")
    error, hint = _one_error(proc)
    assert error == f"error: {notes} is not a git work tree" and f"git init {notes}" in hint
    assert sorted(p.name for p in notes.iterdir()) == ["todo.txt"]
    _untouched(seeded_live)


def test_a_lock_left_by_a_killed_git_is_named_with_what_to_do(
    seeded_live: int, tmp_path: Path
) -> None:
    # A reset killed while it committed leaves .git/index.lock: the next one must say which
    # file stops it (git's own last line, "remove the file manually to continue", does not).
    work = tmp_path / "knowledge"
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    lock = work / ".git" / "index.lock"
    lock.write_text("")
    save_tenant(load_tenant(TENANT).model_copy(update={"knowledge_repo": str(work)}))
    error, hint = _one_error(_nika("compress", "--tenant", TENANT, "--reset"))
    assert f"{lock} exists" in error
    assert f"remove {lock}" in hint and "the memory store is unchanged" in hint
    assert lock.exists()  # never removed for the person: a git command may still be running
    _untouched(seeded_live)
