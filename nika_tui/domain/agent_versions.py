"""Agent CLI versions: the ones the real-CLI suite verified, said plainly for any other, and
the oldest one nika's hooks can run on at all."""

from __future__ import annotations

import re

VERIFIED_VERSIONS: dict[str, str] = {
    "claude-code": "2.1.197",
    "codex": "0.171.0",
    "gemini-cli": "0.61.0",
    "opencode": "1.18.33",
}
"""Agent CLI versions the real-CLI suite verified (docs/agents.md; the pins of
tests/agents/cli_install.py); others run, said plainly."""

MINIMUM_VERSIONS: dict[str, str] = {"gemini-cli": "0.26.0"}
"""The first version that runs nika's hooks as installed. Gemini CLI had hooks before 0.26.0
but off unless ``hooks.enabled`` was set (0.24–0.25) or ``tools.enableHooks`` too (before
0.24); 0.26.0 moved the switch to ``hooksConfig.enabled``, on by default (gemini-cli
settingsSchema.ts at v0.24.0 / v0.25.2 / v0.26.0, commit 211d2c5fdd). Older ones start
fine and capture nothing."""

UPGRADE_HINTS: dict[str, str] = {"gemini-cli": "npm install -g @google/gemini-cli@latest"}


def version_key(version: str) -> tuple[int, ...]:
    """The numeric release part of a version (``0.26.0-preview.1`` → ``(0, 26, 0)``)."""
    release = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(p) for p in release.group(0).split(".")) if release else ()


def too_old_note(cli: str, version: str | None) -> str:
    """One line when ``version`` is older than the first one nika's hooks run on, else ``""``.

    Args:
        cli: An :class:`nika_tui.domain.tenant.AgentCli` value.
        version: The version ``--version`` printed, ``None`` when it printed none.
    """
    minimum = MINIMUM_VERSIONS.get(cli)
    if not minimum or not version or version_key(version) >= version_key(minimum):
        return ""
    return (
        f"{cli} {version} is older than {minimum}, the first version that runs nika's hooks: "
        f"it would capture and recall nothing; upgrade with `{UPGRADE_HINTS[cli]}`"
    )


def verified_note(cli: str, version: str | None) -> str:
    """The note a doctor line carries for a version the real-CLI suite did not verify.

    Args:
        cli: An :class:`nika_tui.domain.tenant.AgentCli` value.
        version: The version ``--version`` printed, ``None`` when it printed none.

    Returns:
        ``""`` for a verified version, an unknown CLI or no version; else the note.
    """
    verified = VERIFIED_VERSIONS.get(cli)
    if not verified or not version or version == verified:
        return ""
    return (
        f"; not verified with nika (verified: {verified}): hooks are installed the same way, "
        "payload fields it does not send are skipped"
    )
