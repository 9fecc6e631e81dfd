"""Agent CLI versions: the ones the real-CLI suite verified, said plainly for any other."""

from __future__ import annotations

VERIFIED_VERSIONS: dict[str, str] = {"claude-code": "2.1.197", "codex": "0.171.0"}
"""Agent CLI versions the real-CLI suite verified (docs/agents.md); others run, said plainly."""


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
