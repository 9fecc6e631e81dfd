"""Per-tenant agent homes: each tenant's agent CLIs keep settings, sessions and transcripts apart.

Claude Code reads ``CLAUDE_CONFIG_DIR``, Codex ``CODEX_HOME``, Gemini CLI ``GEMINI_CLI_HOME`` and
OpenCode ``OPENCODE_CONFIG_DIR`` (its plugins and config; its sessions stay in its data dir);
they point into ``{data}/tenants/{tenant_id}/agent-home/{claude,codex,gemini,opencode}`` (0700) so
that two tenants never share a settings file, a hook list, a login or a transcript by accident. The
price: each tenant logs in to its CLI once.
"""

from __future__ import annotations

from pathlib import Path

from nika_tui.paths import Roots, ensure_private_dir, roots

HOME_VARS: dict[str, str] = {
    "CLAUDE_CONFIG_DIR": "claude",
    "CODEX_HOME": "codex",
    "GEMINI_CLI_HOME": "gemini",
    "OPENCODE_CONFIG_DIR": "opencode",
}
"""Environment variable → sub-directory of the tenant's agent home."""


def agent_home_root(tenant_id: str, where: Roots | None = None) -> Path:
    """``{data}/tenants/{tenant_id}/agent-home``."""
    return (where or roots()).tenant_data_dir(tenant_id) / "agent-home"


def claude_config_dir(tenant_id: str, where: Roots | None = None) -> Path:
    """The tenant's ``CLAUDE_CONFIG_DIR`` (settings.json, projects/ transcripts)."""
    return agent_home_root(tenant_id, where) / HOME_VARS["CLAUDE_CONFIG_DIR"]


def codex_home(tenant_id: str, where: Roots | None = None) -> Path:
    """The tenant's ``CODEX_HOME`` (config.toml, sessions/ rollouts)."""
    return agent_home_root(tenant_id, where) / HOME_VARS["CODEX_HOME"]


def agent_home_env(tenant_id: str, where: Roots | None = None) -> dict[str, str]:
    """Create the tenant's agent homes (0700) and return the variables that select them."""
    root = agent_home_root(tenant_id, where)
    out: dict[str, str] = {}
    for var, sub in HOME_VARS.items():
        out[var] = str(ensure_private_dir(root / sub))
    return out


def agents_md(tenant_id: str, where: Roots | None = None) -> Path:
    """The tenant's ``{CODEX_HOME}/AGENTS.md``."""
    return codex_home(tenant_id, where) / "AGENTS.md"


def gemini_md(tenant_id: str, where: Roots | None = None) -> Path:
    """The tenant's ``{GEMINI_CLI_HOME}/.gemini/GEMINI.md``."""
    return (
        agent_home_root(tenant_id, where) / HOME_VARS["GEMINI_CLI_HOME"] / ".gemini" / "GEMINI.md"
    )


def opencode_agents_md(tenant_id: str, where: Roots | None = None) -> Path:
    """The tenant's ``{OPENCODE_CONFIG_DIR}/AGENTS.md``.

    OpenCode 1.18.33 takes its global config path from ``OPENCODE_CONFIG_DIR`` when set and
    loads the first of ``{config}/AGENTS.md`` and ``~/.claude/CLAUDE.md`` that exists into every
    session's system prompt, beside the project's own AGENTS.md (decision 421).
    """
    return agent_home_root(tenant_id, where) / HOME_VARS["OPENCODE_CONFIG_DIR"] / "AGENTS.md"
