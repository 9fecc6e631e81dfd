"""`knowledge_repo` given as a URL: cloned once, pushed back (issue 22, audit gap 6).

The remote is a real bare git repository reached by a ``file://`` URL: git clones, fetches and
pushes it through the same code paths as an ``https://`` or ``ssh://`` remote, with no network.
"""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from nika_tui.domain.memory import Layer
from nika_tui.engine.compress import compress
from nika_tui.engine.context import EngineContext
from nika_tui.engine.reset import reset
from nika_tui.errors import PublishFailed
from nika_tui.services.config_store import load_tenant, save_tenant
from tests.engine.strategy_a_seed import PRIVATE_TEXTS, recall_at_5, seed_history

pytestmark = pytest.mark.embedder
TENANT = "acme"


def _git(*args: str, cwd: Path | None = None) -> str:
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@x", "PATH": "/usr/bin:/bin:/usr/local/bin"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          check=True).stdout  # fmt: skip


def _remote_with_a_readme(tmp_path: Path) -> Path:
    bare = tmp_path / "team-knowledge.git"
    _git("init", "-q", "--bare", "-b", "main", str(bare))
    seed = tmp_path / "someone-else"
    _git("clone", "-q", str(bare), str(seed))
    (seed / "README.md").write_text("Team knowledge\n")
    _git("checkout", "-q", "-b", "main", cwd=seed)
    _git("add", "README.md", cwd=seed)
    _git("commit", "-q", "-m", "readme", cwd=seed)
    _git("push", "-q", "origin", "main", cwd=seed)
    return bare


def _live(ctx: EngineContext) -> int:
    return sum(ctx.vectors.count(TENANT, layer) for layer in Layer)


def test_a_url_repo_is_cloned_once_and_pushed_back(
    engine_ctx: EngineContext,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    make_tenant(TENANT)
    bare = _remote_with_a_readme(tmp_path)
    url = f"file://{bare}"
    save_tenant(load_tenant(TENANT).model_copy(update={"knowledge_repo": url}))
    seeded = seed_history(engine_ctx, TENANT)

    result = reset(engine_ctx, TENANT)
    clone = engine_ctx.settings.roots.tenant_data_dir(TENANT) / "knowledge-repo"
    assert result["compress"]["repo"] == str(clone)
    assert _git("-C", str(clone), "remote", "get-url", "origin").strip() == url
    assert stat.S_IMODE(clone.stat().st_mode) == 0o700
    # The remote got our commit on top of its own history, and no private memory.
    log = _git("--git-dir", str(bare), "log", "--format=%H %s", "main").splitlines()
    assert log[0].split()[0] == result["compress"]["commit"] and log[-1].endswith("readme")
    files = _git("--git-dir", str(bare), "ls-tree", "-r", "--name-only", "main").split()
    assert "README.md" in files and any(f.startswith("knowledge/digest/") for f in files)
    text = "".join(_git("--git-dir", str(bare), "show", f"main:{f}") for f in files)
    assert not any(t in text for t in PRIVATE_TEXTS)
    assert recall_at_5(engine_ctx, TENANT) == 1.0  # the fresh store was built from the clone
    assert _live(engine_ctx) < seeded.live

    # Someone pushes meanwhile: the next compression's push is refused (not a fast-forward),
    # with the fix; the clone is reused (not cloned again) and the store is untouched.
    other = tmp_path / "other"
    _git("clone", "-q", url, str(other))
    (other / "NOTES.md").write_text("more\n")
    _git("add", "NOTES.md", cwd=other)
    _git("commit", "-q", "-m", "notes", cwd=other)
    _git("push", "-q", "origin", "main", cwd=other)
    live = _live(engine_ctx)
    with pytest.raises(PublishFailed) as err:
        compress(engine_ctx, TENANT)
    assert "git push failed" in err.value.message and "\n" not in err.value.message
    assert "pull its new commits first" in err.value.hint
    assert "the memory store is unchanged" in err.value.hint
    assert _live(engine_ctx) == live
    assert _git("--git-dir", str(bare), "log", "--format=%s", "-1", "main").strip() == "notes"


def test_a_url_that_cannot_be_cloned_is_one_line_and_changes_nothing(
    engine_ctx: EngineContext,
    make_tenant,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    make_tenant(TENANT)
    url = f"file://{tmp_path / 'no-such-repo.git'}"
    save_tenant(load_tenant(TENANT).model_copy(update={"knowledge_repo": url}))
    seeded = seed_history(engine_ctx, TENANT)
    with pytest.raises(PublishFailed) as err:
        reset(engine_ctx, TENANT)
    assert err.value.message.startswith("git clone failed") and "\n" not in err.value.message
    assert err.value.hint == f"check that {url} exists and that you can read it"
    assert _live(engine_ctx) == seeded.live
    assert engine_ctx.vectors.generation(TENANT) is None  # type: ignore[attr-defined]
