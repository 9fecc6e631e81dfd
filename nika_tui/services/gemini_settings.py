"""Install nika's hooks into a tenant's Gemini CLI home (``GEMINI_CLI_HOME``).

Gemini CLI (verified 0.61.0) takes ``GEMINI_CLI_HOME`` as its home directory and reads
``{home}/.gemini/settings.json``; we point it at ``{data}/tenants/{t}/agent-home/gemini``. There:

- ``hooks`` → event → ``[{hooks: [{type: "command", command, timeout}]}]`` for SessionStart,
  BeforeAgent, AfterAgent, PreCompress, SessionEnd, Notification, AfterTool (billing: one
  ``tool_call`` entry per call); ``timeout`` in ms: 15,000; merged as for Claude Code (others'
  entries kept, ours replaced in place).
- ``model.compressionThreshold`` = 0.61 when the file sets none: the seed's 61% compaction point,
  which Gemini CLI applies itself (its own default is 0.5).
- ``trustedFolders.json``: the kernel's working directory as ``TRUST_FOLDER``. Gemini CLI runs no
  hook at all in an untrusted folder and refuses to start headless there; the directory is the
  one the person chose for this tenant, and the file is the tenant's own, not ``~/.gemini``.

A file that does not parse is left untouched (``ConfigError``); writes are atomic, 0600.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nika_tui.errors import ConfigError
from nika_tui.paths import Roots
from nika_tui.services.agent_settings import (
    InstallReport,
    _read_json,
    _write_json,
    agent_home,
    merge_hooks,
)

GEMINI_EVENTS: tuple[str, ...] = (
    "SessionStart",
    "BeforeAgent",
    "AfterAgent",
    "PreCompress",
    "SessionEnd",
    "Notification",
    "AfterTool",  # billing: one tool_call entry per call (issue 18)
)
GEMINI_HOOK_TIMEOUT_MS = 15_000
COMPRESSION_THRESHOLD = 0.61
TRUST_FOLDER = "TRUST_FOLDER"


def gemini_home(tenant_id: str, where: Roots | None = None) -> Path:
    """The tenant's ``GEMINI_CLI_HOME`` (Gemini CLI's files are under its ``.gemini``)."""
    return agent_home(tenant_id, "gemini", where)


def merge_gemini_settings(
    settings: dict[str, Any], prefix: Sequence[str] | None = None
) -> dict[str, Any]:
    """``settings`` with our hooks and, unless one is set, the 61% compression threshold.

    Raises:
        ConfigError: ``hooks`` or ``model`` has a shape we do not know.
    """
    merged = merge_hooks(settings, "gemini", GEMINI_EVENTS, prefix, GEMINI_HOOK_TIMEOUT_MS)
    model = merged.setdefault("model", {})
    if not isinstance(model, dict):
        raise ConfigError("Gemini settings: 'model' is not an object", "fix the file by hand")
    model.setdefault("compressionThreshold", COMPRESSION_THRESHOLD)
    return merged


def install_gemini_hooks(
    tenant_id: str,
    where: Roots | None = None,
    prefix: Sequence[str] | None = None,
    workdir: Path | None = None,
) -> InstallReport:
    """Merge our hooks into the tenant's Gemini CLI settings and trust its working directory."""
    report = InstallReport()
    folder = gemini_home(tenant_id, where) / ".gemini"
    path = folder / "settings.json"
    _write_json(path, merge_gemini_settings(_read_json(path), prefix), report)
    if workdir is not None:
        trust_path = folder / "trustedFolders.json"
        trusted = _read_json(trust_path)
        key = str(workdir.resolve())
        if trusted.get(key) != TRUST_FOLDER:
            trusted[key] = TRUST_FOLDER
        _write_json(trust_path, trusted, report)
    return report
