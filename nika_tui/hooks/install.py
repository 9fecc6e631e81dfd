"""The installer the kernel manager calls on spawn (``KernelManager.HOOK_INSTALLER``)."""

from __future__ import annotations

from collections.abc import Mapping

from nika_tui.domain.tenant import TenantConfig
from nika_tui.services.agent_settings import InstallReport, install_agent_hooks


def install_for_tenant(config: TenantConfig, env: Mapping[str, str] | None = None) -> InstallReport:
    """Merge nika's hooks into the settings of each of the tenant's agent CLIs (idempotent).

    Codex hooks are marked trusted only when the tenant consented (``kernel.trust_codex_hooks``).
    """
    workdirs = [config.kernel.workdir] if config.kernel.workdir else []
    report = InstallReport()
    for cli in config.agent_clis:  # several agents, one memory: each gets its hooks
        one = install_agent_hooks(
            config.tenant_id,
            cli.value,
            env,
            trust_codex=bool(config.kernel.trust_codex_hooks),
            workdirs=workdirs,
        )
        report.files += one.files
        report.changed += one.changed
        report.warnings += one.warnings
    return report
