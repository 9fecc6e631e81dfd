"""The installer the kernel manager calls on spawn (``KernelManager.HOOK_INSTALLER``)."""

from __future__ import annotations

from collections.abc import Mapping

from nika_tui.domain.tenant import TenantConfig
from nika_tui.services.agent_settings import InstallReport, install_agent_hooks


def install_for_tenant(config: TenantConfig, env: Mapping[str, str] | None = None) -> InstallReport:
    """Merge nika's hooks into the tenant's agent settings (Claude Code or Codex; idempotent).

    Codex hooks are marked trusted only when the tenant consented (``kernel.trust_codex_hooks``).
    """
    workdirs = [config.kernel.workdir] if config.kernel.workdir else []
    return install_agent_hooks(
        config.tenant_id,
        config.agent_cli.value,
        env,
        trust_codex=bool(config.kernel.trust_codex_hooks),
        workdirs=workdirs,
    )
