"""What a tenant's kernel runs: its argument list, working directory and session environment.

The command is ``kernel.command`` from the tenant config (an argument list, passed on as one —
never joined into shell text) or the CLI's executable from :mod:`nika_tui.services.agent_clis`.
The environment is set in the tmux *session* environment (``new-session -e``): ``kernel.env``,
then ours, which win — ``NIKA_TENANT_ID``, ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=61`` (Claude Code
reads it from its process environment), the per-tenant agent homes (``CLAUDE_CONFIG_DIR``,
``CODEX_HOME``) and nika's own locations so that hooks and MCP inside the kernel use the same
stores. A ``REDIS_URL`` carrying a password is left out: secrets never go on a tmux command line
(the kernel then inherits the tmux server's environment).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlparse

from nika_tui.domain.tenant import TenantConfig
from nika_tui.errors import ConfigError, KernelError
from nika_tui.paths import Roots
from nika_tui.services.agent_clis import INSTALL_HINTS, binary_for
from nika_tui.services.agent_homes import agent_home_env

AUTOCOMPACT_PCT = "61"
NIKA_LOCATION_VARS = ("NIKA_OS_CONFIG_DIR", "NIKA_OS_DATA_DIR", "NIKA_TMUX_SOCKET")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def workdir_for(config: TenantConfig, parent_env: Mapping[str, str]) -> Path:
    """The agent's working directory: ``kernel.workdir``, else the home directory.

    Raises:
        ConfigError: the directory does not exist.
    """
    raw = config.kernel.workdir
    path = Path(raw).expanduser() if raw else Path(parent_env.get("HOME") or Path.home())
    if not path.is_dir():
        raise ConfigError(
            f"tenant {config.tenant_id}: kernel.workdir {str(path)!r} is not a directory",
            "create it or fix kernel.workdir with `nika setup kernel`",
        )
    return path


def base_environment(config: TenantConfig, parent_env: Mapping[str, str]) -> dict[str, str]:
    """``kernel.env`` plus nika's variables (without creating the agent homes).

    Raises:
        ConfigError: a ``kernel.env`` name is not a valid variable name.
    """
    out: dict[str, str] = {}
    for key in NIKA_LOCATION_VARS:
        if parent_env.get(key):
            out[key] = parent_env[key]
    url = parent_env.get("REDIS_URL")
    if url and urlparse(url).password is None:
        out["REDIS_URL"] = url
    for key, value in config.kernel.env.items():
        if not _ENV_NAME.fullmatch(key):
            raise ConfigError(
                f"tenant {config.tenant_id}: kernel.env has an invalid variable name {key!r}",
                "use letters, digits and '_' (not starting with a digit)",
            )
        out[key] = value
    # Ours win over kernel.env: isolation and the 61% threshold are not optional.
    out["NIKA_TENANT_ID"] = config.tenant_id
    out["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] = AUTOCOMPACT_PCT
    return out


def session_environment(
    config: TenantConfig, where: Roots, parent_env: Mapping[str, str]
) -> dict[str, str]:
    """Every variable of the tenant's tmux session; creates its agent homes (0700).

    Args:
        config: The tenant.
        where: The roots of the caller's settings: where the tenant's agent homes are.
        parent_env: What the kernel starts from (nika's locations and ``REDIS_URL`` are passed
            on from it).
    """
    out = base_environment(config, parent_env)
    out.update(agent_home_env(config.tenant_id, where))
    return out


def command_for(config: TenantConfig, parent_env: Mapping[str, str]) -> list[str]:
    """The agent's argument list, checked to be runnable.

    Raises:
        ConfigError: ``kernel.command`` is empty.
        KernelError: the executable is not installed (the hint names the install) or the
            configured path is not an executable.
    """
    overridden = config.kernel.command is not None
    argv = (
        list(config.kernel.command)
        if config.kernel.command is not None
        else [binary_for(config.agent_cli, parent_env)]
    )
    if not argv or not argv[0]:
        raise ConfigError(
            f"tenant {config.tenant_id}: kernel.command is empty",
            "remove kernel.command to use the CLI's default, or give an argument list",
        )
    exe = argv[0]
    if "/" in exe:
        path = Path(exe).expanduser()
        if not path.is_absolute():
            path = workdir_for(config, parent_env) / path
        found = path.is_file() and os.access(path, os.X_OK)
    else:
        search = base_environment(config, parent_env).get("PATH", parent_env.get("PATH"))
        found = shutil.which(exe, path=search) is not None
    if not found:
        hint = (
            f"fix kernel.command in {config.tenant_id}'s config: {exe!r} is not an executable"
            if overridden
            else INSTALL_HINTS[config.agent_cli]
        )
        where = "" if "/" in exe else " on PATH"
        raise KernelError(f"{config.agent_cli.value}: command {exe!r} not found{where}", hint)
    return argv


def extra_commands(
    config: TenantConfig, parent_env: Mapping[str, str]
) -> list[tuple[str, list[str]]]:
    """(window name, argv) of each agent CLI run beside the first one (``more_agent_clis``).

    Raises:
        KernelError: one of them is not installed (the hint names the install).
    """
    search = base_environment(config, parent_env).get("PATH", parent_env.get("PATH"))
    out: list[tuple[str, list[str]]] = []
    for cli in config.more_agent_clis:
        exe = binary_for(cli, parent_env)
        found = shutil.which(exe, path=search)
        if found is None:
            raise KernelError(f"{cli.value}: command {exe!r} not found on PATH", INSTALL_HINTS[cli])
        out.append((cli.value, [found]))  # the program nika found, whatever the pane's PATH
    return out
