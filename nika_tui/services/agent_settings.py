"""Install nika's hooks into a tenant's agent settings (per-tenant agent homes).

- Claude Code: ``{data}/tenants/{t}/agent-home/claude/settings.json`` (the kernel exports it
  as ``CLAUDE_CONFIG_DIR``), ``hooks`` → event → ``[{matcher?, hooks: [{type, command,
  timeout}]}]`` for SessionStart, UserPromptSubmit, PreCompact, PostCompact, Stop, SessionEnd,
  Notification.
- Codex: ``{data}/tenants/{t}/agent-home/codex/`` (``CODEX_HOME``): ``hooks.json`` (same shape,
  SessionStart, UserPromptSubmit, PreCompact, PostCompact, Stop, SessionEnd), ``[features]
  hooks = true`` and ``notify = [nika, "hook", "codex", "notify"]`` in ``config.toml``; with the
  tenant's consent, the trust entries Codex needs (:mod:`nika_tui.services.codex_trust`).

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

import tomlkit
import tomlkit.exceptions

from nika_tui.domain.tenant_id import check_tenant_id
from nika_tui.errors import ConfigError
from nika_tui.paths import Roots
from nika_tui.services.agent_homes import agent_home_root
from nika_tui.services.codex_trust import TrustReport, merge_trust, trust_entries, trust_report
from nika_tui.services.files import atomic_write_text

CLAUDE_EVENTS: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PreCompact",
    "PostCompact",
    "Stop",
    "SessionEnd",
    "Notification",
    "PostToolUse",  # billing: one tool_call entry per call (issue 18)
)
CODEX_EVENTS: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PreCompact",
    "PostCompact",
    "Stop",
    "SessionEnd",
    "PostToolUse",  # billing: one tool_call entry per call (issue 18)
)
HOOK_TIMEOUT_S = 15
"""Seconds the CLI waits for our hook (the hook's own budget is 8 s)."""
CODEX_TIMEOUTS_S: dict[str, int] = {"SessionEnd": 3}
"""Codex clamps a SessionEnd hook to 3 s (and warns on every run when it has to)."""


@dataclass
class InstallReport:
    """What an install changed."""

    files: list[Path] = field(default_factory=list)
    changed: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def agent_home(tenant_id: str, cli: str, where: Roots | None = None) -> Path:
    """``{data}/tenants/{t}/agent-home/{claude|codex}``."""
    check_tenant_id(tenant_id)
    return agent_home_root(tenant_id, where) / cli


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
    timeouts: Mapping[str, int] | None = None,
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
                        "timeout": (timeouts or {}).get(event, timeout),
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
    tenant_id: str, where: Roots | None = None, prefix: Sequence[str] | None = None
) -> InstallReport:
    """Merge our hooks into the tenant's Claude Code ``settings.json`` (idempotent)."""
    report = InstallReport()
    path = agent_home(tenant_id, "claude", where) / "settings.json"
    settings = merge_hooks(_read_json(path), "claude", CLAUDE_EVENTS, prefix)
    _write_json(path, settings, report)
    return report


# --- Codex config.toml (tomlkit: the user's comments and layout are kept) --------------------
def merge_codex_config(text: str, notify: Sequence[str]) -> tuple[str, list[str]]:
    """``config.toml`` text with our ``notify`` and ``[features] hooks = true``.

    ``[features].codex_hooks`` is removed: Codex 0.17x deprecates it for ``hooks`` and warns
    on every run while it is there.

    Returns:
        The new text and warnings (e.g. a previous notify program that we replaced).

    Raises:
        ConfigError: the existing text is not valid TOML (left untouched).
    """
    try:
        data = tomllib.loads(text)
        doc = tomlkit.parse(text)
    except (tomllib.TOMLDecodeError, tomlkit.exceptions.TOMLKitError) as exc:
        raise ConfigError(f"config.toml is not valid TOML ({exc})", "fix the file by hand") from exc
    warnings: list[str] = []
    current = data.get("notify")
    head = ""
    if current != list(notify):
        if current:
            warnings.append(f"replaced the previous Codex notify program {current!r}")
        if "notify" in doc:
            del doc["notify"]
        # A top-level key must come before the first table: the first line is safe.
        head = f"notify = [{', '.join(json.dumps(p, ensure_ascii=False) for p in notify)}]\n"
    features = doc.get("features")
    if not isinstance(features, dict):
        features = tomlkit.table()
        doc["features"] = features
    if "codex_hooks" in features:
        del features["codex_hooks"]
    features["hooks"] = True
    new_text = head + tomlkit.dumps(doc)
    check = tomllib.loads(new_text)  # never write a file Codex could not read
    if check.get("notify") != list(notify) or check.get("features", {}).get("hooks") is not True:
        raise ConfigError("could not merge our settings into config.toml", "edit it by hand")
    return new_text, warnings


def _ours(command: Any, event: str) -> bool:
    return _is_ours(command, "codex", event)


def install_codex_hooks(
    tenant_id: str,
    where: Roots | None = None,
    prefix: Sequence[str] | None = None,
    trust: bool = False,
    workdirs: Sequence[str] = (),
) -> InstallReport:
    """Merge our ``hooks.json``, ``notify`` and the hooks feature flag into ``CODEX_HOME``.

    Args:
        tenant_id: the tenant.
        where: the roots (None: those of ``os.environ``).
        prefix: how Codex runs us (default: :func:`nika_command`).
        trust: the tenant consented: mark our hooks trusted (hashes as Codex computes them)
            and ``workdirs`` as trusted projects, so Codex runs them without asking.
        workdirs: the kernel's working directories.
    """
    report = InstallReport()
    home = agent_home(tenant_id, "codex", where)
    hooks_path = home / "hooks.json"
    hooks_doc = merge_hooks(
        _read_json(hooks_path), "codex", CODEX_EVENTS, prefix, timeouts=CODEX_TIMEOUTS_S
    )
    _write_json(hooks_path, hooks_doc, report)
    config_path = home / "config.toml"
    old = config_path.read_text(encoding="utf-8") if config_path.exists() else ""
    notify = [*(prefix or nika_command()), "hook", "codex", "notify"]
    new, warnings = merge_codex_config(old, notify)
    if trust:
        entries = trust_entries(hooks_path, hooks_doc["hooks"], _ours)
        dirs = [str(Path(d).resolve()) for d in workdirs if d]
        new = merge_trust(new, entries, dirs)
    report.warnings += warnings
    report.files.append(config_path)
    if new != old:
        atomic_write_text(config_path, new)
        report.changed.append(config_path)
    return report


def codex_trust_report(tenant_id: str, where: Roots | None = None) -> TrustReport:
    """Whether Codex would run nika's hooks for this tenant (doctor, dashboard)."""
    return trust_report(agent_home(tenant_id, "codex", where), _ours)
