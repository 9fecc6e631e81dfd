"""Codex hook trust: the entries Codex wants in ``config.toml`` before it runs a hook.

Codex (0.17x) runs no command hook of ``hooks.json`` until a person trusted it: the TUI asks
("Hooks need review"), ``codex exec`` skips untrusted hooks silently. Trust is stored in the
user's ``config.toml``::

    [hooks.state."<abs path of hooks.json>:<event_label>:<group>:<handler>"]
    trusted_hash = "sha256:<hex>"

computed as Codex does it (``codex-rs/hooks/src/engine/discovery.rs`` ``command_hook_hash`` and
``codex-rs/config/src/fingerprint.rs`` ``version_for_toml``): the identity
``{"event_name": <snake_case label>, "matcher"?: …, "hooks": [<normalized handler>]}`` where the
handler is ``{"type": "command", "command", "timeout": timeout or 600 (at least 1; SessionEnd
clamped to 1..3), "async"}`` plus ``statusMessage`` when set; absent (None) fields are dropped
(the value goes through TOML); then JSON with keys sorted, compact, SHA-256. UserPromptSubmit
and Stop ignore their matcher. The key uses the path of ``hooks.json`` as Codex sees it (its
``CODEX_HOME``, resolved).

nika writes these entries only with the tenant's consent (``kernel.trust_codex_hooks``, asked
by the wizard and ``nika setup agent``), and only for its own hooks, plus the project trust
(``[projects."<workdir>"] trust_level = "trusted"``) so a spawned kernel starts without the
"Trust this folder?" prompt. Without consent, :func:`trust_report` tells ``nika doctor`` and the
dashboard which hooks are untrusted and how to trust them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions
from tomlkit.items import Table

from nika_tui.errors import ConfigError

DEFAULT_TIMEOUT_S = 600
SESSION_END_MAX_TIMEOUT_S = 3
_NO_MATCHER_EVENTS = frozenset({"UserPromptSubmit", "Stop"})


def event_label(event: str) -> str:
    """Codex's key label of an event: ``UserPromptSubmit`` → ``user_prompt_submit``."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", event).lower()


def normalized_timeout(event: str, timeout: Any) -> int:
    """The timeout Codex runs (and hashes) a handler with."""
    value = timeout if isinstance(timeout, int) and not isinstance(timeout, bool) else None
    if event == "SessionEnd":
        return min(max(value or 1, 1), SESSION_END_MAX_TIMEOUT_S)
    return max(value or DEFAULT_TIMEOUT_S, 1)


def hook_hash(event: str, matcher: str | None, handler: Mapping[str, Any]) -> str:
    """``sha256:…`` of one command handler, exactly as Codex computes ``trusted_hash``."""
    normalized: dict[str, Any] = {
        "type": "command",
        "command": str(handler.get("command", "")),
        "timeout": normalized_timeout(event, handler.get("timeout")),
        "async": bool(handler.get("async", False)),
    }
    if handler.get("statusMessage") is not None:
        normalized["statusMessage"] = str(handler["statusMessage"])
    identity: dict[str, Any] = {"event_name": event_label(event), "hooks": [normalized]}
    if matcher is not None and event not in _NO_MATCHER_EVENTS:
        identity["matcher"] = matcher
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def hooks_json_key_path(hooks_json: Path) -> str:
    """The path Codex puts in the state key (its ``CODEX_HOME`` is canonicalised)."""
    return str(hooks_json.resolve())


def trust_entries(
    hooks_json: Path, hooks: Mapping[str, Any], is_ours: Any = None
) -> dict[str, str]:
    """``{state key: trusted_hash}`` for the command handlers of a ``hooks.json`` document.

    Args:
        hooks_json: the file's path.
        hooks: its ``hooks`` object (event → matcher groups).
        is_ours: ``(command, event) -> bool``; only matching handlers are listed (None: all).
    """
    base = hooks_json_key_path(hooks_json)
    out: dict[str, str] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        for gi, group in enumerate(groups):
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                continue
            matcher = group.get("matcher")
            for hi, handler in enumerate(group["hooks"]):
                if not isinstance(handler, dict) or handler.get("type", "command") != "command":
                    continue
                if is_ours is not None and not is_ours(handler.get("command"), event):
                    continue
                key = f"{base}:{event_label(event)}:{gi}:{hi}"
                out[key] = hook_hash(event, matcher if isinstance(matcher, str) else None, handler)
    return out


def _parse(text: str) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(text)
    except tomlkit.exceptions.TOMLKitError as exc:
        raise ConfigError(
            f"Codex config.toml is not valid TOML ({exc})", "fix the file by hand"
        ) from exc


def _table(parent: Any, key: str) -> Table:
    existing = parent.get(key)
    if isinstance(existing, Table):
        return existing
    created = tomlkit.table(is_super_table=True)
    parent[key] = created
    return created


def merge_trust(text: str, entries: Mapping[str, str], trusted_dirs: Sequence[str] = ()) -> str:
    """``config.toml`` text with these ``[hooks.state."…"]`` hashes and project trusts.

    Other keys, tables and comments are kept (tomlkit round-trips the file); an entry of ours
    that is stale (an old path or hash) is replaced.

    Raises:
        ConfigError: the existing text is not valid TOML (left untouched).
    """
    doc = _parse(text)
    if entries:
        state = _table(_table(doc, "hooks"), "state")
        for key, digest in entries.items():
            current = state.get(key)
            if isinstance(current, Table):
                current["trusted_hash"] = digest
            else:
                item = tomlkit.table()
                item["trusted_hash"] = digest
                state[key] = item
    if trusted_dirs:
        projects = _table(doc, "projects")
        for directory in trusted_dirs:
            current = projects.get(directory)
            if isinstance(current, Table):
                current["trust_level"] = "trusted"
            else:
                item = tomlkit.table()
                item["trust_level"] = "trusted"
                projects[directory] = item
    return tomlkit.dumps(doc)


@dataclass
class TrustReport:
    """Which of nika's Codex hooks Codex would run."""

    trusted: list[str] = field(default_factory=list)
    untrusted: list[str] = field(default_factory=list)
    """Events whose hook has no trusted hash, or a stale one (the hook changed since)."""

    @property
    def ok(self) -> bool:
        """Every hook of ours is trusted."""
        return not self.untrusted and bool(self.trusted)

    def hint(self, tenant_id: str) -> str:
        """How a person trusts them."""
        return (
            f"run `nika setup agent --tenant {tenant_id}` and allow nika to trust its own "
            "Codex hooks, or open Codex in the kernel and approve them under /hooks"
        )


def trust_report(home: Path, is_ours: Any) -> TrustReport:
    """Compare our hooks in ``home/hooks.json`` with the hashes trusted in ``config.toml``."""
    report = TrustReport()
    hooks_path = home / "hooks.json"
    try:
        hooks = json.loads(hooks_path.read_text(encoding="utf-8")).get("hooks", {})
        config = _parse((home / "config.toml").read_text(encoding="utf-8")).unwrap()
    except (OSError, ValueError, AttributeError, ConfigError):
        return report
    wanted = trust_entries(hooks_path, hooks if isinstance(hooks, dict) else {}, is_ours)
    state = config.get("hooks", {}).get("state", {}) if isinstance(config, dict) else {}
    for key, digest in wanted.items():
        event = key.rsplit(":", 3)[1]
        have = state.get(key, {}) if isinstance(state, dict) else {}
        trusted = isinstance(have, dict) and have.get("trusted_hash") == digest
        (report.trusted if trusted else report.untrusted).append(event)
    return report
