"""Register nika's MCP server (``nika mcp``) with a tenant's agent CLIs, in their own homes.

Each CLI gets a server named ``nika`` that runs this install's ``nika mcp`` with the tenant's
scope in its ``env``: ``NIKA_TENANT_ID``, ``NIKA_AGENT_TYPE`` (recorded with what the agent
writes) and ``NIKA_OS_CONFIG_DIR`` / ``NIKA_OS_DATA_DIR`` (where the embedded Redis and the
tenant's files are). No secret is written: a ``REDIS_URL`` is never copied into a config, the
server inherits it from the kernel (Codex, which passes MCP servers only a whitelist of
variables, is told to forward it by name).

- Claude Code (verified 2.1.197): ``$CLAUDE_CONFIG_DIR/.claude.json`` ``mcpServers.nika``
  (``{"type": "stdio", command, args, env}``, where ``claude mcp add --scope user`` writes), and
  ``permissions.allow`` gets ``mcp__nika`` in ``settings.json`` (the server's tools run without
  a prompt: they are scoped to the tenant and never delete).
- Codex (verified 0.171.0): ``[mcp_servers.nika]`` in ``$CODEX_HOME/config.toml`` with
  ``env_vars = ["REDIS_URL"]``, ``required = true`` (``codex exec`` waits for it, else its first
  request may lack the tools), ``startup_timeout_sec`` and ``default_tools_approval_mode =
  "approve"`` (``codex exec`` never asks: an unapproved MCP call fails).
- Gemini CLI (verified 0.61.0): ``$GEMINI_CLI_HOME/.gemini/settings.json`` ``mcpServers.nika``
  with ``trust: true`` (no confirmation per call) and a ``timeout`` our start-up fits in.
- OpenCode (verified 1.18.33): ``$OPENCODE_CONFIG_DIR/opencode.json`` ``mcp.nika``
  (``{"type": "local", command, environment, enabled: true}``).

The ``nika`` entry is nika's and is rewritten when it differs; every other server and key is
kept. A file that does not parse is left untouched (``ConfigError``); writes are atomic, 0600.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions

from nika_tui.errors import ConfigError
from nika_tui.paths import Roots, roots
from nika_tui.services.agent_settings import (
    InstallReport,
    _read_json,
    _write_json,
    agent_home,
    nika_command,
)
from nika_tui.services.files import atomic_write_text

SERVER_NAME = "nika"
CLAUDE_PERMISSION = f"mcp__{SERVER_NAME}"
"""Claude Code's permission rule for every tool of the server."""
FORWARDED_VARS: tuple[str, ...] = ("REDIS_URL",)
"""Variables Codex must pass on from the kernel (named only: their values stay out of files)."""
CODEX_STARTUP_TIMEOUT_S = 120
"""How long ``codex exec`` waits for ``nika mcp`` (Python start-up on a busy machine: 1–8 s)."""
GEMINI_TIMEOUT_MS = 120_000
"""Gemini CLI's bound on each request to the server, connection included (its own default is
10 min, but ``gemini mcp list`` waits 5 s unless told, too short for our start-up). Above the
60 s a correction may wait for its ingest."""


def mcp_argv(prefix: Sequence[str] | None = None) -> list[str]:
    """How a CLI starts our MCP server: ``<nika> mcp``."""
    return [*(prefix or nika_command()), "mcp"]


def server_env(tenant_id: str, agent: str, where: Roots | None = None) -> dict[str, str]:
    """The server's scope: the tenant, the agent, nika's roots (paths only, never a secret)."""
    r = where or roots()
    return {
        "NIKA_TENANT_ID": tenant_id,
        "NIKA_AGENT_TYPE": agent,
        "NIKA_OS_CONFIG_DIR": str(r.config),
        "NIKA_OS_DATA_DIR": str(r.data),
    }


def _object(parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = parent.setdefault(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: {key!r} is not an object", "fix the file by hand")
    return value


def _register_json(
    path: Path, section: str, entry: dict[str, Any], report: InstallReport
) -> dict[str, Any]:
    data = _read_json(path)
    _object(data, section, str(path))[SERVER_NAME] = entry
    _write_json(path, data, report)
    return data


def register_claude(
    tenant_id: str, where: Roots | None = None, prefix: Sequence[str] | None = None
) -> InstallReport:
    """``mcpServers.nika`` in the tenant's ``.claude.json``; ``mcp__nika`` allowed in settings."""
    report = InstallReport()
    home = agent_home(tenant_id, "claude", where)
    argv = mcp_argv(prefix)
    entry = {
        "type": "stdio",
        "command": argv[0],
        "args": argv[1:],
        "env": server_env(tenant_id, "claude-code", where),
    }
    _register_json(home / ".claude.json", "mcpServers", entry, report)
    settings_path = home / "settings.json"
    settings = _read_json(settings_path)
    permissions = _object(settings, "permissions", str(settings_path))
    allow = permissions.setdefault("allow", [])
    if not isinstance(allow, list):
        raise ConfigError(f"{settings_path}: permissions.allow is not a list", "fix it by hand")
    if CLAUDE_PERMISSION not in allow:
        allow.append(CLAUDE_PERMISSION)
    _write_json(settings_path, settings, report)
    return report


def merge_codex_mcp(text: str, argv: Sequence[str], env: dict[str, str]) -> str:
    """``config.toml`` text with our ``[mcp_servers.nika]`` (other servers and keys kept).

    Raises:
        ConfigError: the text is not valid TOML, or ``mcp_servers`` is not a table.
    """
    try:
        doc = tomlkit.parse(text)
    except tomlkit.exceptions.TOMLKitError as exc:
        raise ConfigError(f"config.toml is not valid TOML ({exc})", "fix the file by hand") from exc
    servers = doc.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        doc["mcp_servers"] = servers
    if not isinstance(servers, dict):
        raise ConfigError("config.toml: 'mcp_servers' is not a table", "fix the file by hand")
    server = tomlkit.table()
    server["command"] = argv[0]
    server["args"] = list(argv[1:])
    inline = tomlkit.inline_table()
    inline.update(env)
    server["env"] = inline
    server["env_vars"] = list(FORWARDED_VARS)
    server["required"] = True
    server["startup_timeout_sec"] = CODEX_STARTUP_TIMEOUT_S
    server["default_tools_approval_mode"] = "approve"
    if SERVER_NAME in servers and _same(servers[SERVER_NAME], server):
        return text
    servers[SERVER_NAME] = server
    new_text = tomlkit.dumps(doc)
    check = tomllib.loads(new_text)  # never write a file Codex could not read
    if check.get("mcp_servers", {}).get(SERVER_NAME, {}).get("env") != env:
        raise ConfigError("could not merge the nika MCP server into config.toml", "edit it by hand")
    return new_text


def _same(old: Any, new: Any) -> bool:
    unwrap = getattr(old, "unwrap", None)
    return callable(unwrap) and unwrap() == new.unwrap()


def register_codex(
    tenant_id: str, where: Roots | None = None, prefix: Sequence[str] | None = None
) -> InstallReport:
    """``[mcp_servers.nika]`` in the tenant's ``CODEX_HOME/config.toml``."""
    report = InstallReport()
    path = agent_home(tenant_id, "codex", where) / "config.toml"
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    new = merge_codex_mcp(old, mcp_argv(prefix), server_env(tenant_id, "codex", where))
    report.files.append(path)
    if new != old:
        atomic_write_text(path, new)
        report.changed.append(path)
    return report


def register_gemini(
    tenant_id: str, where: Roots | None = None, prefix: Sequence[str] | None = None
) -> InstallReport:
    """``mcpServers.nika`` (trusted: no confirmation per call) in the tenant's Gemini settings."""
    report = InstallReport()
    argv = mcp_argv(prefix)
    entry = {
        "command": argv[0],
        "args": argv[1:],
        "env": server_env(tenant_id, "gemini-cli", where),
        "trust": True,
        "timeout": GEMINI_TIMEOUT_MS,
    }
    path = agent_home(tenant_id, "gemini", where) / ".gemini" / "settings.json"
    _register_json(path, "mcpServers", entry, report)
    return report


def register_opencode(
    tenant_id: str, where: Roots | None = None, prefix: Sequence[str] | None = None
) -> InstallReport:
    """``mcp.nika`` (a local server) in the tenant's ``OPENCODE_CONFIG_DIR/opencode.json``."""
    report = InstallReport()
    entry = {
        "type": "local",
        "command": mcp_argv(prefix),
        "environment": server_env(tenant_id, "opencode", where),
        "enabled": True,
    }
    path = agent_home(tenant_id, "opencode", where) / "opencode.json"
    _register_json(path, "mcp", entry, report)
    return report


REGISTRARS = {
    "claude-code": register_claude,
    "codex": register_codex,
    "gemini-cli": register_gemini,
    "opencode": register_opencode,
}
"""Agent CLI (``AgentCli`` value) → its registration."""


def register_mcp(
    tenant_id: str, cli: str, where: Roots | None = None, prefix: Sequence[str] | None = None
) -> InstallReport:
    """Register ``nika mcp`` with one of the tenant's agent CLIs; a CLI without MCP: nothing."""
    registrar = REGISTRARS.get(cli)
    return registrar(tenant_id, where, prefix) if registrar else InstallReport()
