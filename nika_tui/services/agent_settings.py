"""Install nika's hooks into a tenant's agent settings (per-tenant agent homes).

- Claude Code: ``{data}/tenants/{t}/agent-home/claude/settings.json`` (the kernel exports it
  as ``CLAUDE_CONFIG_DIR``), ``hooks`` → event → ``[{matcher?, hooks: [{type, command,
  timeout}]}]`` for SessionStart, UserPromptSubmit, PreCompact, Stop, SessionEnd, Notification.
- Codex: ``{data}/tenants/{t}/agent-home/codex/`` (``CODEX_HOME``): ``hooks.json`` (same shape,
  SessionStart, UserPromptSubmit, PreCompact, Stop), ``[features] codex_hooks = true`` and
  ``notify = [nika, "hook", "codex", "notify"]`` in ``config.toml``.

Merging keeps everything else in the files; our entries are recognised by their command
(``… hook claude EVENT`` / ``… hook codex EVENT``), replaced in place, never duplicated, so
installing twice changes nothing. A file we cannot parse is left untouched (ConfigError).
Writes are atomic, files 0600, dirs 0700.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nika_tui.domain.tenant_id import check_tenant_id
from nika_tui.errors import ConfigError
from nika_tui.services.agent_homes import agent_home_root
from nika_tui.services.files import atomic_write_text

CLAUDE_EVENTS: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PreCompact",
    "Stop",
    "SessionEnd",
    "Notification",
    "PostToolUse",  # billing: one tool_call entry per call (issue 18)
)
CODEX_EVENTS: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PreCompact",
    "Stop",
    "PostToolUse",
)
HOOK_TIMEOUT_S = 15
"""Seconds the CLI waits for our hook (the hook's own budget is 8 s)."""


@dataclass
class InstallReport:
    """What an install changed."""

    files: list[Path] = field(default_factory=list)
    changed: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def agent_home(tenant_id: str, cli: str, env: Mapping[str, str] | None = None) -> Path:
    """``{data}/tenants/{t}/agent-home/{claude|codex}``."""
    check_tenant_id(tenant_id)
    return agent_home_root(tenant_id, env) / cli


def nika_command() -> list[str]:
    """How an agent CLI runs us: the ``nika`` script beside this Python, else ``python -m``."""
    script = Path(sys.executable).with_name("nika")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "nika_tui"]


def hook_command(cli: str, event: str, prefix: Sequence[str] | None = None) -> str:
    """The shell command string of one hook (Claude Code and Codex run it with a shell)."""
    parts = [*(prefix or nika_command()), "hook", cli, event]
    return " ".join(shlex.quote(p) for p in parts)


def _is_ours(command: Any, cli: str, event: str) -> bool:
    if not isinstance(command, str):
        return False
    return bool(
        re.search(rf"(^|[\s/'\"])(nika|nika_tui)['\"]? hook {cli} {re.escape(event)}$", command)
    )


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except ValueError as exc:
        raise ConfigError(
            f"{path} is not valid JSON ({exc})",
            "fix or move the file away, then run `nika kernel spawn` again (it was left untouched)",
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object", "fix or move the file away")
    return data


def merge_hooks(
    settings: dict[str, Any],
    cli: str,
    events: Sequence[str],
    prefix: Sequence[str] | None = None,
    timeout: int = HOOK_TIMEOUT_S,
) -> dict[str, Any]:
    """``settings`` with exactly one nika entry per event (others' entries kept, in order).

    ``timeout`` is in the CLI's own unit (seconds for Claude Code and Codex, ms for Gemini CLI).

    Raises:
        ConfigError: ``hooks`` has a shape we do not know (left for a person to fix).
    """
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError("settings: 'hooks' is not an object", "fix the file by hand")
    for event in events:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ConfigError(f"settings: hooks.{event} is not a list", "fix the file by hand")
        kept: list[Any] = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                inner = [h for h in group["hooks"] if not _is_ours(_cmd(h), cli, event)]
                if inner:
                    kept.append({**group, "hooks": inner})
            else:
                kept.append(group)
        kept.append(
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": hook_command(cli, event, prefix),
                        "timeout": timeout,
                    }
                ]
            }
        )
        hooks[event] = kept
    return settings


def _cmd(hook: Any) -> Any:
    return hook.get("command") if isinstance(hook, dict) else None


def _write_json(path: Path, data: Mapping[str, Any], report: InstallReport) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    report.files.append(path)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    atomic_write_text(path, text)
    report.changed.append(path)


def install_claude_hooks(
    tenant_id: str, env: Mapping[str, str] | None = None, prefix: Sequence[str] | None = None
) -> InstallReport:
    """Merge our hooks into the tenant's Claude Code ``settings.json`` (idempotent)."""
    report = InstallReport()
    path = agent_home(tenant_id, "claude", env) / "settings.json"
    settings = merge_hooks(_read_json(path), "claude", CLAUDE_EVENTS, prefix)
    _write_json(path, settings, report)
    return report


# --- Codex config.toml (no TOML writer in the lock file: minimal, verified line edits) -------
def _toml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _strip_top_level_key(lines: list[str], key: str) -> list[str]:
    out: list[str] = []
    skipping = depth = 0
    in_table = False
    for line in lines:
        stripped = line.strip()
        if skipping:
            depth += stripped.count("[") - stripped.count("]")
            if depth <= 0:
                skipping = 0
            continue
        if stripped.startswith("["):
            in_table = True
        if not in_table and re.match(rf"^{re.escape(key)}\s*=", stripped):
            depth = stripped.count("[") - stripped.count("]")
            skipping = 1 if depth > 0 else 0
            continue
        out.append(line)
    return out


def merge_codex_config(text: str, notify: Sequence[str]) -> tuple[str, list[str]]:
    """``config.toml`` text with our ``notify`` and ``[features] codex_hooks = true``.

    Returns:
        The new text and warnings (e.g. a previous notify program that we replaced).

    Raises:
        ConfigError: the existing text is not valid TOML (left untouched).
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config.toml is not valid TOML ({exc})", "fix the file by hand") from exc
    warnings: list[str] = []
    lines = text.splitlines()
    current = data.get("notify")
    if current != list(notify):
        if current:
            warnings.append(f"replaced the previous Codex notify program {current!r}")
        lines = _strip_top_level_key(lines, "notify")
        lines.insert(0, f"notify = [{', '.join(_toml_str(p) for p in notify)}]")
    features = data.get("features")
    if not isinstance(features, dict) or features.get("codex_hooks") is not True:
        header = next((i for i, ln in enumerate(lines) if ln.strip() == "[features]"), None)
        if header is None:
            lines += ["", "[features]", "codex_hooks = true"]
        else:
            body_end = header + 1
            while body_end < len(lines) and not lines[body_end].strip().startswith("["):
                body_end += 1
            kept = [
                ln
                for ln in lines[header + 1 : body_end]
                if not re.match(r"^\s*codex_hooks\s*=", ln)
            ]
            lines[header + 1 : body_end] = ["codex_hooks = true", *kept]
    new_text = "\n".join(lines).rstrip("\n") + "\n"
    check = tomllib.loads(new_text)  # never write a file Codex could not read
    if (
        check.get("notify") != list(notify)
        or check.get("features", {}).get("codex_hooks") is not True
    ):
        raise ConfigError("could not merge our settings into config.toml", "edit it by hand")
    return new_text, warnings


def install_codex_hooks(
    tenant_id: str, env: Mapping[str, str] | None = None, prefix: Sequence[str] | None = None
) -> InstallReport:
    """Merge our ``hooks.json``, ``notify`` and the hooks feature flag into ``CODEX_HOME``."""
    report = InstallReport()
    home = agent_home(tenant_id, "codex", env)
    hooks_path = home / "hooks.json"
    _write_json(
        hooks_path, merge_hooks(_read_json(hooks_path), "codex", CODEX_EVENTS, prefix), report
    )
    config_path = home / "config.toml"
    old = config_path.read_text(encoding="utf-8") if config_path.exists() else ""
    notify = [*(prefix or nika_command()), "hook", "codex", "notify"]
    new, warnings = merge_codex_config(old, notify)
    report.warnings += warnings
    report.files.append(config_path)
    if new != old:
        atomic_write_text(config_path, new)
        report.changed.append(config_path)
    return report


def install_agent_hooks(
    tenant_id: str, cli: str, env: Mapping[str, str] | None = None, workdir: Path | None = None
) -> InstallReport:
    """Install our hooks for the tenant's agent CLI; a CLI without hooks (shell): none.

    ``workdir`` is the kernel's working directory (Gemini CLI runs hooks only in a trusted one).
    """
    if cli == "claude-code":
        return install_claude_hooks(tenant_id, env)
    if cli == "codex":
        return install_codex_hooks(tenant_id, env)
    if cli == "gemini-cli":
        from nika_tui.services.gemini_settings import install_gemini_hooks

        return install_gemini_hooks(tenant_id, env, workdir=workdir)
    if cli == "opencode":
        from nika_tui.services.opencode_settings import install_opencode_plugin

        return install_opencode_plugin(tenant_id, env)
    return InstallReport()
