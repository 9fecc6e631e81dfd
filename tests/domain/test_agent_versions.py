"""Agent CLI versions: which are too old for nika's hooks, compared by their release part."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from nika_tui.domain.agent_versions import too_old_note, version_key


class OldCase(NamedTuple):
    test_id: str
    cli: str
    version: str | None
    too_old: bool


OLD_CASES = [
    OldCase("gemini-before-hooks-by-default", "gemini-cli", "0.25.2", True),
    OldCase("gemini-prerelease-by-its-release", "gemini-cli", "0.27.0-preview.1", False),
    OldCase("gemini-minimum", "gemini-cli", "0.26.0", False),
    OldCase("gemini-two-digit-minor-is-newer", "gemini-cli", "0.100.0", False),
    OldCase("gemini-no-version-printed", "gemini-cli", None, False),
    OldCase("no-minimum-for-opencode", "opencode", "0.0.1", False),
]  # fmt: skip


@pytest.mark.parametrize("case", OLD_CASES, ids=[c.test_id for c in OLD_CASES])
def test_too_old(case: OldCase) -> None:
    note = too_old_note(case.cli, case.version)
    assert bool(note) is case.too_old
    if case.too_old:
        assert "\n" not in note and "older than 0.26.0" in note


def test_version_key_reads_the_release_part() -> None:
    assert version_key("0.26.0-nightly.20260115.6cb3ae4e0") == (0, 26, 0)
    assert version_key("v1") == ()
