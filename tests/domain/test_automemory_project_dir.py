"""Claude Code's directory name for a project, exactly as claude 2.1.197's ``$E`` computes it.

The expected names were produced by running the binary's own function under node (decision
422): ``e.replace(/[^a-zA-Z0-9]/g, "-")``, and past 200 characters the cut name, ``-`` and
``Math.abs(hash).toString(36)`` with ``hash = (hash << 5) - hash + e.charCodeAt(n) | 0``.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from nika_tui.domain.automemory import js_string_hash, project_dir_name

LONG = "/srv/" + "very-long-directory-name/" * 10 + "web"


class Case(NamedTuple):
    test_id: str
    path: str
    name: str


CASES = [
    Case("plain", "/srv/acme/web", "-srv-acme-web"),
    Case("dots-and-underscores", "/home/a.b/my_app", "-home-a-b-my-app"),
    # é is one UTF-16 unit, 🚀 two: JavaScript's regex replaces each unit.
    Case("non-ascii", "/srv/café 🚀/web", "-srv-caf-----web"),
    Case(
        "longer-than-200",
        LONG,
        "-srv" + "-very-long-directory-name" * 7 + "-very-long-directory--2rsi1f",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_project_dir_name_is_claude_codes(case: Case) -> None:
    assert project_dir_name(case.path) == case.name


def test_string_hash_wraps_like_javascript() -> None:
    # Values printed by node for the binary's jCe(): 32-bit signed, negative when it wraps.
    assert js_string_hash(LONG) == -167611731
    assert js_string_hash("/srv/café 🚀/web") == 1422106592
    assert js_string_hash("") == 0
