"""What the agent CLI already loads from the tenant's native instruction file.

The service writes current facts into a block of Codex's ``AGENTS.md``, Gemini CLI's
``GEMINI.md`` and OpenCode's global ``AGENTS.md`` (auto-memory, issue 20). Each CLI puts that
file into every session's context by itself, so a fact it carries must not be injected again
by the digest or the prompt recall (seen with the real OpenCode: the fact reached the model
twice once the sync had run). Claude Code's ``MEMORY.md`` holds one-line pointers, not the
facts, and is left out.
"""

from __future__ import annotations

from pathlib import Path

from nika_tui.paths import Roots
from nika_tui.services.agent_homes import agents_md, gemini_md, opencode_agents_md

MAX_BYTES = 256 * 1024
"""Read at most this much: the block is a few KB; a huge file is the person's, not ours."""


def native_file(cli: str, tenant_id: str, where: Roots) -> Path | None:
    """The instruction file ``cli`` loads for this tenant, when nika keeps a block in one."""
    paths = {"codex": agents_md, "gemini": gemini_md, "opencode": opencode_agents_md}
    path = paths.get(cli)
    return path(tenant_id, where) if path is not None else None


def native_text(cli: str, tenant_id: str, where: Roots) -> str:
    """That file's text ("" when there is none or it cannot be read: nothing is skipped)."""
    path = native_file(cli, tenant_id, where)
    if path is None:
        return ""
    try:
        with path.open("rb") as f:
            return f.read(MAX_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""
