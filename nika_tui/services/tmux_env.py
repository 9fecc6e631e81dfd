"""The environment of nika's private tmux server: an allow-list, nothing inherited by accident.

tmux copies the environment of the client that *starts* its server into the server's global
environment, and every pane inherits it. Started from the operator's shell, that leaked
``SCW_*``, ``AWS_*`` and any other secret of that shell into every tenant's kernel. So every
tmux command nika runs is run with :func:`server_environment` (an allow-list), the server is
told not to copy client variables on attach (``update-environment`` empty), and a server
found running with anything else in its global environment is scrubbed before a kernel starts
(:func:`foreign_globals`). A kernel then sees the allow-list plus its own session variables
(:mod:`nika_tui.services.kernel_launch`): its tenant's ``kernel.env``, ``NIKA_TENANT_ID``, its
agent homes and nika's locations — never another tenant's, never a provider key (those are for
the scaling planner, read from the keyring, never from a kernel).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

ALLOWED_VARS: frozenset[str] = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TERM",
        "TZ",
        "TMPDIR",
        "PWD",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_RUNTIME_DIR",
        "NIKA_OS_CONFIG_DIR",
        "NIKA_OS_DATA_DIR",
        "NIKA_TMUX_SOCKET",
    }
)
"""Variables the tmux server (and so every kernel) may inherit from whoever started it."""
ALLOWED_PREFIXES: tuple[str, ...] = ("LC_",)
TMUX_OWN_VARS: frozenset[str] = frozenset({"TMUX", "TMUX_PANE"})
"""Set by tmux itself inside panes; never copied into the global environment."""


def allowed(name: str) -> bool:
    """True when ``name`` may reach the tmux server's global environment."""
    return name in ALLOWED_VARS or name.startswith(ALLOWED_PREFIXES)


def server_environment(parent_env: Mapping[str, str]) -> dict[str, str]:
    """The allow-listed part of ``parent_env``: the environment every tmux client runs with."""
    return {key: value for key, value in parent_env.items() if allowed(key)}


def parse_show_environment(lines: Iterable[str]) -> list[str]:
    """Variable names in ``tmux show-environment -g`` output (``-NAME`` marks an unset one)."""
    names: list[str] = []
    for line in lines:
        if not line or line.startswith("-"):
            continue
        names.append(line.split("=", 1)[0])
    return names


def foreign_globals(lines: Iterable[str]) -> list[str]:
    """Names in a server's global environment that the allow-list does not admit."""
    return [name for name in parse_show_environment(lines) if not allowed(name)]
