"""Where nika-os keeps things (XDG), in one place.

Config: ``$NIKA_OS_CONFIG_DIR`` → ``$XDG_CONFIG_HOME/nika-os`` → ``~/.config/nika-os``.
Data:   ``$NIKA_OS_DATA_DIR``   → ``$XDG_DATA_HOME/nika-os``   → ``~/.local/share/nika-os``.
Every directory we create is 0700 and every file 0600: memories and configs are private.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Roots:
    """The roots resolved once, at a process's entry (``Settings.roots``), and the layout under
    them: code that only needs a path takes these, not an environment (decision 310)."""

    config: Path
    """The configuration root (:func:`config_dir`)."""
    data: Path
    """The data root (:func:`data_dir`)."""
    tmux_socket: str = "nika"
    """The private tmux socket name (:func:`tmux_socket_name`)."""

    @property
    def tenants_dir(self) -> Path:
        """``{config}/tenants``."""
        return self.config / "tenants"

    def tenant_config_path(self, tenant_id: str) -> Path:
        """``{config}/tenants/{tenant_id}/config.yaml``."""
        return self.tenants_dir / tenant_id / "config.yaml"

    def tenant_data_dir(self, tenant_id: str) -> Path:
        """``{data}/tenants/{tenant_id}``: bus, hierarchy, archives, agent homes."""
        return self.data / "tenants" / tenant_id


def roots(env: Mapping[str, str] | None = None) -> Roots:
    """The roots ``env`` (``os.environ`` when None) resolves to, by the rules above."""
    return Roots(config=config_dir(env), data=data_dir(env), tmux_socket=tmux_socket_name(env))


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and its missing parents) as 0700 and return it.

    ``mkdir(parents=True, mode=…)`` gives the mode to the leaf only: the parents it creates
    (``data/``, ``data/tenants/``) were left at the umask's 0755.
    """
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe.parent != probe:
        missing.append(probe)
        probe = probe.parent
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    for created in missing:
        os.chmod(created, DIR_MODE)
    os.chmod(path, DIR_MODE)
    return path


def tighten_modes(root: Path) -> int:
    """Make every directory under ``root`` 0700 and every file 0600 (symlinks and sockets
    untouched); how many were changed. ``nika up`` runs it over the config and data dirs so an
    installation made by an earlier version (0755 / 0644) is private too."""
    import stat

    changed = 0
    if not root.is_dir():
        return 0
    for current, dirs, files in os.walk(root):
        for name, want in [(d, DIR_MODE) for d in dirs] + [(f, FILE_MODE) for f in files]:
            path = os.path.join(current, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                continue
            if stat.S_IMODE(st.st_mode) & 0o077:
                os.chmod(path, want)
                changed += 1
    if stat.S_IMODE(root.stat().st_mode) & 0o077:
        os.chmod(root, DIR_MODE)
        changed += 1
    return changed
