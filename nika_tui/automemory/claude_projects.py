"""Which of a tenant's Claude Code project directories to sync, keyed as Claude Code keys them.

Claude Code 2.1.197 keeps one auto-memory per *project*: ``{CLAUDE_CONFIG_DIR}/projects/
{project_dir_name(root)}/memory``, where ``root`` is the canonical git root of the directory it
started in (the git root above it; for a linked worktree, the main checkout's root, so every
worktree of a repository shares one memory), else that directory itself (decision 422).

A tenant works in more places than its kernel's workdir: every session it ran left a transcript
in ``{CLAUDE_CONFIG_DIR}/projects/{name of its cwd}/*.jsonl`` whose records carry the ``cwd``.
:func:`claude_roots` reads them so each project the tenant's Claude Code has worked in is synced.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from nika_tui.paths import Roots
from nika_tui.services.agent_homes import claude_config_dir

TRANSCRIPT_LINES = 20
"""Records read from the top of a transcript looking for its ``cwd``."""


def _main_checkout(root: Path) -> Path:
    """The main checkout of a linked worktree at ``root``, else ``root`` (claude's ``$Cs``)."""
    try:
        head = (root / ".git").read_text(encoding="utf-8").strip()
        if not head.startswith("gitdir:"):
            return root
        gitdir = (root / head[len("gitdir:") :].strip()).resolve()
        common = (gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()).resolve()
        if gitdir.parent != common / "worktrees":
            return root
        back = Path((gitdir / "gitdir").read_text(encoding="utf-8").strip()).resolve()
        if back != root.resolve() / ".git":
            return root
    except (OSError, UnicodeDecodeError):
        return root  # a plain checkout (``.git`` is a directory) or a broken worktree
    return common if common.name != ".git" else common.parent


def claude_project_root(workdir: Path) -> str:
    """The directory Claude Code keys its memory by: the canonical git root above ``workdir``
    (a linked worktree's main checkout), else ``workdir`` itself."""
    path = workdir.resolve()
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return str(_main_checkout(candidate))
    return str(path)


def _transcript_cwd(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8") as fh:
            for _, line in zip(range(TRANSCRIPT_LINES), fh, strict=False):
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                cwd = record.get("cwd") if isinstance(record, dict) else None
                if isinstance(cwd, str) and cwd:
                    return cwd
    except (OSError, UnicodeDecodeError):
        return None
    return None


def claude_roots(tenant_id: str, where: Roots | None = None) -> list[str]:
    """Project roots the tenant's Claude Code has sessions in (from its transcripts' ``cwd``),
    sorted; directories that no longer exist are skipped (nothing would read their memory)."""
    projects = claude_config_dir(tenant_id, where) / "projects"
    found: set[str] = set()
    try:
        folders = [p for p in projects.iterdir() if p.is_dir()]
    except OSError:
        return []
    for folder in folders:
        transcripts = sorted(folder.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
        for transcript in reversed(transcripts):
            cwd = _transcript_cwd(transcript)
            if cwd is None:
                continue
            if os.path.isdir(cwd):
                found.add(claude_project_root(Path(cwd)))
            break
    return sorted(found)
