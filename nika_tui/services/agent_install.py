"""Install nika's hooks, and register ``nika mcp``, for a tenant's agent CLI: one entry."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from nika_tui.paths import Roots
from nika_tui.services.agent_settings import (
    InstallReport,
    install_claude_hooks,
    install_codex_hooks,
)
from nika_tui.services.gemini_settings import install_gemini_hooks
from nika_tui.services.mcp_register import register_mcp
from nika_tui.services.opencode_settings import install_opencode_plugin


def install_agent_hooks(
    tenant_id: str,
    cli: str,
    where: Roots | None = None,
    workdir: Path | None = None,
    trust_codex: bool = False,
    workdirs: Sequence[str] = (),
) -> InstallReport:
    """Install our hooks for the tenant's agent CLI and register our MCP server with it.

    A CLI without hooks or MCP (shell): nothing. ``workdir`` is the kernel's working directory
    (Gemini CLI runs hooks only in a trusted one).
    """
    report = _install_hooks(tenant_id, cli, where, workdir, trust_codex, workdirs)
    mcp = register_mcp(tenant_id, cli, where)
    report.files += [f for f in mcp.files if f not in report.files]
    report.changed += [f for f in mcp.changed if f not in report.changed]
    report.warnings += mcp.warnings
    return report


def _install_hooks(
    tenant_id: str,
    cli: str,
    where: Roots | None,
    workdir: Path | None,
    trust_codex: bool,
    workdirs: Sequence[str],
) -> InstallReport:
    if cli == "claude-code":
        return install_claude_hooks(tenant_id, where)
    if cli == "codex":
        return install_codex_hooks(tenant_id, where, trust=trust_codex, workdirs=workdirs)
    if cli == "gemini-cli":
        return install_gemini_hooks(tenant_id, where, workdir=workdir)
    if cli == "opencode":
        return install_opencode_plugin(tenant_id, where)
    return InstallReport()
