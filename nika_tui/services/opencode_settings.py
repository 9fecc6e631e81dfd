"""Install nika's plugin into a tenant's OpenCode config dir (``OPENCODE_CONFIG_DIR``).

OpenCode (verified 1.18.33) loads every ``*.js`` / ``*.ts`` file of ``{config dir}/plugin/`` at
start; the kernel points ``OPENCODE_CONFIG_DIR`` at ``{data}/tenants/{t}/agent-home/opencode``.
We write ``plugin/nika-memory.js`` from the asset ``nika_tui/assets/opencode_plugin.js`` with the
absolute ``nika`` command filled in (JSON, so no quoting issue). The file is ours alone: it is
rewritten when it differs (a moved venv updates it) and left as is otherwise. Everything else in
the directory (the person's ``opencode.json``, other plugins) is never touched. 0600, atomic.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from nika_tui.paths import Roots
from nika_tui.services.agent_settings import InstallReport, agent_home, nika_command
from nika_tui.services.files import atomic_write_text

PLUGIN_ASSET = Path(__file__).resolve().parents[1] / "assets" / "opencode_plugin.js"
PLUGIN_NAME = "nika-memory.js"
_PLACEHOLDER = "__NIKA_COMMAND__"


def opencode_config_dir(tenant_id: str, where: Roots | None = None) -> Path:
    """The tenant's ``OPENCODE_CONFIG_DIR``."""
    return agent_home(tenant_id, "opencode", where)


def plugin_text(prefix: Sequence[str] | None = None) -> str:
    """The plugin's source with our command filled in."""
    command = json.dumps(list(prefix or nika_command()), ensure_ascii=False)
    return PLUGIN_ASSET.read_text(encoding="utf-8").replace(_PLACEHOLDER, command, 1)


def install_opencode_plugin(
    tenant_id: str, where: Roots | None = None, prefix: Sequence[str] | None = None
) -> InstallReport:
    """Write (or refresh) ``plugin/nika-memory.js`` in the tenant's OpenCode config dir."""
    report = InstallReport()
    path = opencode_config_dir(tenant_id, where) / "plugin" / PLUGIN_NAME
    text = plugin_text(prefix)
    report.files.append(path)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        atomic_write_text(path, text)
        report.changed.append(path)
    return report
