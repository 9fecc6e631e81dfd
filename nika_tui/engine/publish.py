"""Versioned publication (strategy A, step 4): commit the knowledge trees, push the public one.

Two trees, split by sensitivity (:mod:`nika_tui.domain.sensitivity`):

- the **knowledge repo** — ``--repo PATH``, else the tenant's ``knowledge_repo`` (a local work
  tree, or a git URL cloned to ``{data}/tenants/{t}/knowledge-repo`` with the URL as
  ``origin``). After the commit it is pushed to ``origin`` when it has one. When its
  ``knowledge_repo_visibility`` is ``public`` (the default) it never receives a private memory;
- the **private tree** — ``{data}/tenants/{t}/knowledge-private``, a local git work tree (0700)
  that is never pushed: it holds what a public repo may not. With a repo marked ``private``
  everything goes to the repo and there is no private tree.

git runs with ``GIT_TERMINAL_PROMPT=0`` (a push needing a password fails instead of waiting) and
the user's own credentials (ssh agent, credential helper); no secret is ever on its command line.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from nika_tui.domain.answers import knowledge_repo_is_url
from nika_tui.domain.tenant import TenantConfig
from nika_tui.errors import PublishFailed, ValidationFailed
from nika_tui.paths import Roots, ensure_private_dir

GIT_TIMEOUT_S = 300.0
_USERINFO = re.compile(r"(?<=://)[^@/\s]+@")


def scrub(text: str) -> str:
    """``https://user:token@host`` → ``https://host``: no credential in a message or a log."""
    return _USERINFO.sub("", text)


def _env(base: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in base.items() if not k.startswith("GIT_")}
    env.update(
        GIT_TERMINAL_PROMPT="0",
        GIT_AUTHOR_NAME="nika-os",
        GIT_AUTHOR_EMAIL="nika-os@localhost",
        GIT_COMMITTER_NAME="nika-os",
        GIT_COMMITTER_EMAIL="nika-os@localhost",
    )
    env.setdefault("PATH", "/usr/bin:/bin:/usr/local/bin")
    return env


def git(repo: Path, *args: str, child_env: Mapping[str, str] | None = None, hint: str = "") -> str:
    """Run ``git -C repo ARGS``; failures become :class:`PublishFailed` (one line + the fix)."""
    try:
        out = subprocess.run(
            ["git", "-c", "commit.gpgsign=false", "-C", str(repo), *args],
            capture_output=True,
            text=True,
            check=True,
            env=_env(os.environ if child_env is None else child_env),
            timeout=GIT_TIMEOUT_S,
        )
    except FileNotFoundError as exc:
        raise PublishFailed("git is not installed", "install git to use compression") from exc
    except subprocess.TimeoutExpired as exc:
        raise PublishFailed(
            f"git {args[0]} in {repo} took more than {GIT_TIMEOUT_S:.0f} s",
            "check the network and the remote; the memory store is unchanged",
        ) from exc
    except subprocess.CalledProcessError as exc:
        lines = [ln for ln in (exc.stderr or exc.stdout or "").strip().splitlines() if ln.strip()]
        lock = _stale_lock(lines)
        if lock:
            # A git command killed mid-way (a reset killed while it committed, say) leaves its
            # lock; git's own last line ("remove the file manually") does not name the file.
            raise PublishFailed(
                f"git {args[0]} failed in {repo}: {lock} exists (a git command was killed "
                "there, or is still running)",
                f"if no git command is running in {repo}, remove {lock} and run again; "
                "the memory store is unchanged",
            ) from exc
        detail = scrub(lines[-1].strip())[:200] if lines else f"exit {exc.returncode}"
        raise PublishFailed(
            f"git {args[0]} failed in {repo}: {detail}",
            hint
            or "check the repository (a valid, writable git work tree); the store is unchanged",
        ) from exc
    return out.stdout


def _stale_lock(lines: Sequence[str]) -> str:
    """The ``*.lock`` file git could not create, from its ``Unable to create '…': File exists``."""
    for line in lines:
        if "Unable to create '" in line and ".lock'" in line and "File exists" in line:
            return line.split("Unable to create '", 1)[1].split("'", 1)[0]
    return ""


def ensure_work_tree(repo: Path, child_env: Mapping[str, str] | None = None) -> Path:
    """A git work tree at ``repo``: created (``git init``) when missing or empty.

    Raises:
        ValidationFailed: ``repo`` is a file, or a non-empty directory that is not the top of a
            git work tree.
    """
    if repo.exists() and not repo.is_dir():
        raise ValidationFailed(f"{repo} is not a directory", "pass a git work tree with --repo")
    if not repo.exists() or not any(repo.iterdir()):
        ensure_private_dir(repo)
        git(repo, "init", "-q", child_env=child_env)
        return repo
    try:
        top = git(repo, "rev-parse", "--show-toplevel", child_env=child_env).strip()
    except PublishFailed:
        top = ""
    if not top or Path(top).resolve() != repo.resolve():
        raise ValidationFailed(
            f"{repo} is not a git work tree",
            f"run `git init {repo}` (or clone your knowledge repo there), or pass an empty "
            "directory; the memory store is unchanged",
        )
    return repo


def knowledge_repo(
    config: TenantConfig, override: Path | None, where: Roots
) -> tuple[Path, str | None]:
    """The work tree of the tenant's knowledge repo and the URL to clone it from, if any.

    Raises:
        ValidationFailed: no repo given and none configured.
    """
    if override is not None:
        return override, None
    value = (config.knowledge_repo or "").strip()
    if not value:
        raise ValidationFailed(
            f"tenant {config.tenant_id} has no knowledge repo",
            "pass --repo PATH, or set one with `nika setup` (knowledge_repo)",
        )
    if knowledge_repo_is_url(value):
        return where.tenant_data_dir(config.tenant_id) / "knowledge-repo", value
    return Path(value).expanduser(), None


def prepare_repo(repo: Path, url: str | None, child_env: Mapping[str, str] | None = None) -> Path:
    """The knowledge repo's work tree, cloned from ``url`` the first time when it is a URL."""
    if url is not None and not (repo / ".git").exists():
        ensure_private_dir(repo.parent)
        git(repo.parent, "clone", "-q", url, str(repo), child_env=child_env,
            hint=f"check that {url} exists and that you can read it")  # fmt: skip
        # git creates it with the umask's mode (0755): the checkout is read through it only.
        repo.chmod(0o700)
        return repo
    return ensure_work_tree(repo, child_env)


def private_tree(tenant_id: str, where: Roots, child_env: Mapping[str, str] | None = None) -> Path:
    """The tenant's local, never-pushed private knowledge tree (a git work tree, 0700)."""
    root = ensure_private_dir(where.tenant_data_dir(tenant_id) / "knowledge-private")
    return ensure_work_tree(root, child_env)


def has_remote(
    repo: Path, remote: str = "origin", child_env: Mapping[str, str] | None = None
) -> bool:
    """True when ``repo`` has a remote called ``remote``."""
    return remote in git(repo, "remote", child_env=child_env).split()


def commit(
    repo: Path, paths: Sequence[str], message: str, child_env: Mapping[str, str] | None = None
) -> str | None:
    """Stage ``paths`` and commit; the new commit id, or None when nothing changed."""
    if not paths:
        return None
    git(repo, "add", "--", *paths, child_env=child_env)
    if not git(repo, "status", "--porcelain", "--", *paths, child_env=child_env).strip():
        return None
    git(repo, "commit", "-q", "-m", message, "--", *paths, child_env=child_env)
    return git(repo, "rev-parse", "HEAD", child_env=child_env).strip()


def push(repo: Path, remote: str = "origin", child_env: Mapping[str, str] | None = None) -> str:
    """Push the current branch to ``remote``; return the branch.

    Raises:
        PublishFailed: the remote refused the push (one line, with what to do).
    """
    branch = git(repo, "rev-parse", "--abbrev-ref", "HEAD", child_env=child_env).strip()
    url = scrub(git(repo, "remote", "get-url", remote, child_env=child_env).strip())
    git(
        repo,
        "push",
        "-q",
        remote,
        f"HEAD:refs/heads/{branch}",
        child_env=child_env,
        hint=f"fix access to {url} (credentials, branch protection, hooks) or pull its new "
        "commits first, then run again; the memory store is unchanged",
    )
    return branch
