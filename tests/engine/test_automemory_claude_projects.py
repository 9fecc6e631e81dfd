"""Each project a tenant's Claude Code works in gets its own auto-memory, where claude reads it.

Claude Code 2.1.197 keys the memory by the canonical git root (a linked worktree's main
checkout) and the tenant works in every directory its sessions' transcripts name (decision 422).
Real git repositories and worktrees, real files; the sync on the real stores and embedder.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from nika_tui.automemory.claude_projects import claude_project_root, claude_roots
from nika_tui.automemory.claude_sync import memory_dir
from nika_tui.automemory.runner import sync_tenant
from nika_tui.domain.automemory import project_dir_name
from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.engine.context import EngineContext
from nika_tui.engine.ingest import ingest_batch
from nika_tui.services.agent_homes import claude_config_dir


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    _git("init", "-q", cwd=path)
    _git(
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "0",
        cwd=path,
    )
    return path


def _transcript(tenant_id: str, cwd: Path) -> None:
    folder = claude_config_dir(tenant_id) / "projects" / project_dir_name(str(cwd))
    folder.mkdir(parents=True, exist_ok=True)
    lines = [{"type": "summary"}, {"type": "user", "cwd": str(cwd), "sessionId": "s1"}]
    (folder / "s1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_root_is_the_git_root_and_a_worktrees_main_checkout(tmp_path: Path) -> None:
    main = _repo(tmp_path / "main")
    (main / "src" / "deep").mkdir(parents=True)
    _git("worktree", "add", "-q", str(tmp_path / "feature"), cwd=main)
    (tmp_path / "feature" / "src").mkdir(exist_ok=True)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert claude_project_root(main / "src" / "deep") == str(main.resolve())
    # Every worktree of a repository shares the main checkout's memory, as in claude.
    assert claude_project_root(tmp_path / "feature" / "src") == str(main.resolve())
    assert claude_project_root(plain) == str(plain.resolve())


def test_roots_come_from_the_tenants_transcripts(tmp_path: Path) -> None:
    web = _repo(tmp_path / "web")
    (web / "app").mkdir()
    api = tmp_path / "api"
    api.mkdir()
    _transcript("acme", web / "app")
    _transcript("acme", api)
    _transcript("acme", tmp_path / "gone")  # removed since: nothing would read its memory
    _transcript("other", tmp_path / "web")  # another tenant's sessions are not acme's
    assert claude_roots("acme") == sorted([str(web.resolve()), str(api.resolve())])


@pytest.mark.embedder
def test_each_project_worked_in_gets_its_own_facts(
    engine_ctx: EngineContext, make_tenant: Callable[..., TenantConfig], tmp_path: Path
) -> None:
    make_tenant("acme")
    web, api = _repo(tmp_path / "web"), _repo(tmp_path / "api")
    _transcript("acme", web)
    _transcript("acme", api)
    now = datetime(2026, 3, 2, 9, tzinfo=UTC)
    facts = {
        "web": "The web app deploys to production on Thursdays at 10:00",
        "api": "The api rate limit is 600 requests per minute per customer",
    }
    reqs = [
        RememberRequest(tenant_id="acme", text=t, meta=NikaMeta(timestamp=now, project_id=p))
        for p, t in facts.items()
    ]
    ingest_batch(engine_ctx, reqs)
    sync_tenant(engine_ctx, "acme", workdir=str(web))
    roots = engine_ctx.settings.roots
    web_index = (memory_dir("acme", str(web.resolve()), roots) / "MEMORY.md").read_text()
    api_index = (memory_dir("acme", str(api.resolve()), roots) / "MEMORY.md").read_text()
    assert "Thursdays" in web_index
    assert "rate limit" in api_index and "Thursdays" not in api_index
