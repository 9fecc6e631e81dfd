"""What nika needs to know about each agent CLI to run it in a kernel, in one data table.

Keys are :class:`nika_tui.domain.tenant.AgentCli` values. The executable and its install hint
live in :mod:`nika_tui.services.agent_clis` (detection); ``home_env`` names the variable that
moves the CLI's settings/state directory into the tenant's agent home so that tenants share
nothing by accident; ``exit_command`` / ``compact_command`` are typed into the pane as text.
"""

from __future__ import annotations

from dataclasses import dataclass

from nika_tui.domain.tenant import AgentCli


@dataclass(frozen=True, slots=True)
class AgentCliSpec:
    """How one agent CLI is started, stopped and compacted."""

    cli: AgentCli
    home_env: str | None
    exit_command: str | None
    compact_command: str | None
    native_compact_threshold: bool
    """True when the CLI compacts by itself at a threshold nika sets (Claude Code reads
    ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` from its process environment). Otherwise nika's
    compaction policy decides when to send ``compact_command``."""
    session_start_hook: bool
    """True when the CLI runs a SessionStart hook that re-injects recall on (re)start."""
    exit_keys: tuple[str, ...] = ()
    """tmux keys that make the CLI exit, pressed one at a time *instead of* typing
    ``exit_command`` when set (a stop): for a CLI whose slash completion can take the Enter."""


AGENT_CLIS: dict[AgentCli, AgentCliSpec] = {
    AgentCli.CLAUDE_CODE: AgentCliSpec(
        cli=AgentCli.CLAUDE_CODE,
        home_env="CLAUDE_CONFIG_DIR",
        exit_command="/exit",
        compact_command="/compact",
        native_compact_threshold=True,
        session_start_hook=True,
    ),
    AgentCli.CODEX: AgentCliSpec(
        cli=AgentCli.CODEX,
        home_env="CODEX_HOME",
        exit_command="/quit",
        compact_command="/compact",
        native_compact_threshold=False,
        session_start_hook=True,  # hooks.json SessionStart (codex_hooks feature)
    ),
    AgentCli.GEMINI_CLI: AgentCliSpec(
        cli=AgentCli.GEMINI_CLI,
        home_env="GEMINI_CLI_HOME",
        exit_command="/quit",
        compact_command="/compress",
        # Gemini CLI 0.61 may still show the previous completion list when the Enter after a
        # typed "/quit" arrives, and Enter runs the highlighted entry: a stop ran /clear (a new
        # session) instead. Ctrl-C empties the input, Ctrl-D twice on an empty input quits the
        # way /quit does (SessionEnd, the session summary, status 0).
        exit_keys=("C-c", "C-d", "C-d"),
        # The installer also sets Gemini's own model.compressionThreshold to 0.61 (unless the
        # person set one); nika's policy still sends /compress, for a threshold set higher.
        native_compact_threshold=False,
        session_start_hook=True,
    ),
    AgentCli.OPENCODE: AgentCliSpec(
        cli=AgentCli.OPENCODE,
        home_env="OPENCODE_CONFIG_DIR",
        exit_command="/exit",
        compact_command="/compact",
        native_compact_threshold=False,
        # nika's plugin injects the SessionStart digest with the session's first prompt.
        session_start_hook=True,
    ),
    # A ``shell`` tenant runs whatever ``kernel.command`` says ($SHELL by default). nika
    # speaks the slash-command convention the agent CLIs share (/compact, /exit) to it; a bare
    # shell answers "not found" harmlessly and ``stop`` falls back to C-d, then kill.
    AgentCli.SHELL: AgentCliSpec(
        cli=AgentCli.SHELL,
        home_env=None,
        exit_command="/exit",
        compact_command="/compact",
        native_compact_threshold=False,
        session_start_hook=False,
    ),
}


def spec_for(cli: AgentCli | str) -> AgentCliSpec:
    """The table entry of ``cli`` (a :class:`AgentCli` or its value)."""
    return AGENT_CLIS[AgentCli(cli)]
