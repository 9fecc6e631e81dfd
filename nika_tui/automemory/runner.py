"""``automemory.sync``: the RPC op, and the service's debounced scheduler.

The service marks a tenant dirty after each committed ingest batch and after a REM pass; the
scheduler syncs a dirty tenant once no write has come for :data:`DEBOUNCE_S` (or at the latest
:data:`MAX_DELAY_S` after the first), so a burst of writes costs one sync, not one per write.
Its own imports go through ingest and would mark the tenant dirty again: they are ignored.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from nika_tui.automemory.claude_projects import claude_project_root, claude_roots
from nika_tui.automemory.claude_sync import sync_claude
from nika_tui.automemory.codex_sync import sync_codex, sync_gemini, sync_opencode
from nika_tui.domain import protocol_replies as rep
from nika_tui.domain import protocol_requests as req
from nika_tui.engine.agent_ops import project_counts
from nika_tui.engine.context import EngineContext
from nika_tui.errors import NikaError, ValidationFailed
from nika_tui.hooks.context import project_from_cwd
from nika_tui.services.kernel_launch import workdir_for

log = logging.getLogger("nika.automemory")

DEBOUNCE_S = 5.0
"""Quiet time after the last write before a tenant is synced."""
MAX_DELAY_S = 60.0
"""A tenant written to without pause is still synced this often."""


def sync_tenant(
    ctx: EngineContext, tenant_id: str, project_id: str | None = None, workdir: str | None = None
) -> dict[str, Any]:
    """Sync every native memory of the tenant (Claude Code's auto-memory, Codex's AGENTS.md,
    Gemini CLI's GEMINI.md, OpenCode's global AGENTS.md).

    Args:
        ctx: engine context (the service's: imports are ingested by the single writer).
        tenant_id: the tenant.
        project_id: only this project's memories (plus those of no project).
        workdir: the agent's working directory (default: the tenant's kernel workdir).

    Raises:
        ValidationFailed: ``workdir`` is not a directory, or ``project_id`` is neither a project
            of the tenant's memories nor the workdir's own.
    """
    config = ctx.tenant(tenant_id)
    if workdir and not Path(workdir).is_dir():
        # Claude Code keys its memory by the directory: a typo would create (and fill) the
        # memory dir of a project no agent ever runs in.
        raise ValidationFailed(
            f"--workdir {workdir} is not a directory", "pass the agent's working directory"
        )
    root = claude_project_root(Path(workdir) if workdir else workdir_for(config, ctx.child_env))
    here = project_from_cwd(root)  # the project the agents' hooks record for this workdir
    if project_id:
        _check_project(ctx, tenant_id, project_id, here)
    claude = sync_claude(ctx, tenant_id, root, project_id)
    # The other projects the tenant's Claude Code worked in: each its own memory, with that
    # project's facts (and those of no project) only.
    others = [
        sync_claude(ctx, tenant_id, other, project_id or project_from_cwd(other)).to_dict()
        for other in claude_roots(tenant_id, ctx.settings.roots)
        if other != root and (not project_id or project_from_cwd(other) == project_id)
    ]
    codex = sync_codex(ctx, tenant_id, project_id, here)
    gemini = sync_gemini(ctx, tenant_id, project_id, here)
    opencode = sync_opencode(ctx, tenant_id, project_id, here)
    targets = [claude.to_dict(), *others, codex.to_dict(), gemini.to_dict(), opencode.to_dict()]
    return {"tenant_id": tenant_id, "targets": targets}


def _check_project(ctx: EngineContext, tenant_id: str, project_id: str, here: str) -> None:
    """Refuse a project the tenant has no memory of (a typo would sync only no-project facts
    and import the agent's lines under a project nobody uses); the workdir's own is allowed."""
    if project_id == here:
        return
    known = sorted(p for p in project_counts(ctx, tenant_id) if p)
    if project_id not in known:
        raise ValidationFailed(
            f"tenant {tenant_id} has no project {project_id!r}",
            f"known projects: {', '.join(known) or 'none'}; or omit --project",
        )


def automemory_sync_op(ctx: EngineContext, r: req.AutomemorySyncRequest) -> rep.AutomemorySyncReply:
    return rep.AutomemorySyncReply(
        **sync_tenant(ctx, r.tenant_id, r.project_id or None, r.workdir or None)
    )


class AutoMemoryScheduler:
    """Debounced syncs of tenants the service wrote to (see the module docstring).

    Args:
        sync: syncs one tenant (:meth:`for_context` binds :func:`sync_tenant`; tests pass a
            recorder, so the debounce is checked on a fake clock without the stores).
        monotonic: the clock the debounce is measured on.
    """

    def __init__(
        self, sync: Callable[[str], object], monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self._sync = sync
        self._monotonic = monotonic
        self._dirty: dict[str, tuple[float, float]] = {}  # tenant → (first, last) write
        self._syncing = False

    @classmethod
    def for_context(cls, ctx: EngineContext) -> AutoMemoryScheduler:
        """The service's scheduler: each due tenant gets a full :func:`sync_tenant`."""
        return cls(lambda tenant_id: sync_tenant(ctx, tenant_id))

    def touch(self, tenant_ids: Iterable[str]) -> None:
        """Note writes to these tenants (ignored while a sync's own imports run)."""
        if self._syncing:
            return
        now = self._monotonic()
        for t in tenant_ids:
            first, _ = self._dirty.get(t, (now, now))
            self._dirty[t] = (first, now)

    def tick(self) -> list[str]:
        """Sync the tenants that are due; return them."""
        now = self._monotonic()
        due = [
            t
            for t, (first, last) in self._dirty.items()
            if now - last >= DEBOUNCE_S or now - first >= MAX_DELAY_S
        ]
        done: list[str] = []
        for tenant_id in due:
            self._dirty.pop(tenant_id, None)
            self._syncing = True
            try:
                self._sync(tenant_id)
                done.append(tenant_id)
            except NikaError as exc:
                log.warning("auto-memory sync of %s failed: %s", tenant_id, exc)
            except OSError as exc:  # a full disk or a permission must not stop the writer
                log.warning("auto-memory sync of %s could not write: %s", tenant_id, exc)
            finally:
                self._syncing = False
        return done
