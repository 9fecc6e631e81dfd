"""The installer the kernel manager calls on spawn (``KernelManager.HOOK_INSTALLER``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from nika_tui.domain.tenant import TenantConfig
from nika_tui.services.agent_settings import InstallReport, install_agent_hooks


def install_for_tenant(config: TenantConfig, env: Mapping[str, str] | None = None) -> InstallReport:
    """Merge nika's hooks into the tenant's agent settings (idempotent)."""
    environ = os.environ if env is None else env
    raw = config.kernel.workdir
    workdir = Path(raw).expanduser() if raw else Path(environ.get("HOME") or Path.home())
    return install_agent_hooks(config.tenant_id, config.agent_cli.value, env, workdir=workdir)
