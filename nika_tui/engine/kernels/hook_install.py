"""The installer the kernel manager calls on spawn (:meth:`KernelManager._install_hooks`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from nika_tui.domain.tenant import TenantConfig
from nika_tui.paths import Roots
from nika_tui.services.agent_install import install_agent_hooks
from nika_tui.services.agent_settings import InstallReport


def install_for_tenant(
    config: TenantConfig, where: Roots, home_env: Mapping[str, str] | None = None
) -> InstallReport:
    """Merge nika's hooks into the settings of each of the tenant's agent CLIs (idempotent).

    Codex hooks are marked trusted only when the tenant consented (``kernel.trust_codex_hooks``).
    ``where``: the tenant's agent homes; ``home_env``: the ``HOME`` of a tenant without a
    workdir (``os.environ`` when ``None``).
    """
    environ = os.environ if home_env is None else home_env
    raw = config.kernel.workdir
    workdir = Path(raw).expanduser() if raw else Path(environ.get("HOME") or Path.home())
    report = InstallReport()
    for cli in config.agent_clis:  # several agents, one memory: each gets its hooks
        one = install_agent_hooks(
            config.tenant_id,
            cli.value,
            where,
            workdir=workdir,
            trust_codex=bool(config.kernel.trust_codex_hooks),
            workdirs=[raw] if raw else [],
        )
        report.files += one.files
        report.changed += one.changed
        report.warnings += one.warnings
    return report
