"""After ``nika setup`` writes a tenant: offer to import the chosen agent CLI's own sessions.

Asked only when that CLI's session store exists on disk (``~/.claude/projects``,
``~/.codex/sessions``, ``~/.gemini/tmp``, OpenCode's database or storage) and holds sessions.
The import queues memories (durable); the service ingests them when it runs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TextIO

from nika_tui.domain.tenant import AgentCli
from nika_tui.wizard.prompts import Prompter

KEYWORD: dict[AgentCli, str] = {
    AgentCli.CLAUDE_CODE: "claude",
    AgentCli.CODEX: "codex",
    AgentCli.GEMINI_CLI: "gemini",
    AgentCli.OPENCODE: "opencode",
}
LABEL: dict[AgentCli, str] = {
    AgentCli.CLAUDE_CODE: "Claude Code",
    AgentCli.CODEX: "Codex",
    AgentCli.GEMINI_CLI: "Gemini CLI",
    AgentCli.OPENCODE: "OpenCode",
}


def offer_import(
    ask: Prompter, out: TextIO, tenant_id: str, cli: AgentCli, env: Mapping[str, str] | None = None
) -> bool:
    """Ask to import ``cli``'s existing sessions into the tenant; True when it ran.

    Args:
        ask: the wizard's prompter.
        out: where the report goes.
        tenant_id: the tenant just written.
        cli: the tenant's agent CLI.
        env: overrides of the process's environment.
    """
    from nika_tui.importer.discover import discover, sessions_in

    keyword = KEYWORD.get(cli)
    if keyword is None:
        return False
    # ``env`` overrides the process's (tests point HOME elsewhere; Redis stays the same).
    environ = {**os.environ, **(env or {})}
    units, _notes = discover([keyword], environ)
    # Sessions, not files: OpenCode keeps all of its sessions in one database file.
    sessions = sum(sessions_in(u) for u in units)
    if not sessions:
        return False
    if not ask.confirm(
        f"Import your {sessions} existing {LABEL[cli]} session{'s' * (sessions != 1)} into "
        f"{tenant_id!r}? "
        "(the facts and decisions they state become facts, the turns history; re-running adds "
        "nothing)",
        default=True,
    ):
        out.write(f"Later: `nika import --tenant {tenant_id} {keyword}`\n")
        return False
    import argparse

    from nika_tui.cli.import_cmd import run_import

    run_import(
        argparse.Namespace(
            tenant=tenant_id,
            project="",
            dry_run=False,
            wait=False,
            timeout=0.0,
            max_file_mb=None,
            batch=200,
            sources=[keyword],
            json=False,
        ),
        environ,
    )
    return True
