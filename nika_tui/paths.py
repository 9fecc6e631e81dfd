"""Where nika-os keeps things (XDG), in one place.

Config: ``$NIKA_OS_CONFIG_DIR`` → ``$XDG_CONFIG_HOME/nika-os`` → ``~/.config/nika-os``.
Data:   ``$NIKA_OS_DATA_DIR``   → ``$XDG_DATA_HOME/nika-os``   → ``~/.local/share/nika-os``.
Every directory we create is 0700 and every file 0600: memories and configs are private.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
APP = "nika-os"


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    """The configuration root."""
    e = _env(env)
    if e.get("NIKA_OS_CONFIG_DIR"):
        return Path(e["NIKA_OS_CONFIG_DIR"]).expanduser()
    if e.get("XDG_CONFIG_HOME"):
        return Path(e["XDG_CONFIG_HOME"]).expanduser() / APP
    return Path.home() / ".config" / APP


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """The data root (stores, bus, archives, the embedded Redis)."""
    e = _env(env)
    if e.get("NIKA_OS_DATA_DIR"):
        return Path(e["NIKA_OS_DATA_DIR"]).expanduser()
    if e.get("XDG_DATA_HOME"):
        return Path(e["XDG_DATA_HOME"]).expanduser() / APP
    return Path.home() / ".local" / "share" / APP


def tenants_dir(env: Mapping[str, str] | None = None) -> Path:
    """``{config}/tenants``."""
    return config_dir(env) / "tenants"


def tenant_config_path(tenant_id: str, env: Mapping[str, str] | None = None) -> Path:
    """``{config}/tenants/{tenant_id}/config.yaml``."""
    return tenants_dir(env) / tenant_id / "config.yaml"


def tenant_data_dir(tenant_id: str, env: Mapping[str, str] | None = None) -> Path:
    """``{data}/tenants/{tenant_id}``: bus, hierarchy, archives, agent homes."""
    return data_dir(env) / "tenants" / tenant_id


def tmux_socket_name(env: Mapping[str, str] | None = None) -> str:
    """The private tmux socket name (``tmux -L``), never the user's default server."""
    return _env(env).get("NIKA_TMUX_SOCKET") or "nika"


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) as 0700 and return it."""
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    os.chmod(path, DIR_MODE)
    return path
