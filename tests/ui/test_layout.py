"""The UI package's import rules: screens and widgets see the app only through its protocol
and the dashboard only through its model (the port), never an adapter."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

UI = Path(__file__).resolve().parents[2] / "nika_tui" / "ui"

# What a screen or widget may import from nika_tui: the port, the host protocol, its siblings
# and pure helpers. Adapters (services, the Redis/fixture sources, their parser) and the app
# itself are out: the app imports its screens, so a screen importing the app is a cycle.
ALLOWED = (
    "nika_tui.dashboard.model",
    "nika_tui.dashboard.memory_views",  # the memory browser's part of the port
    "nika_tui.ui.host",
    "nika_tui.ui.screens.",
    "nika_tui.ui.widgets.",
    "nika_tui.domain.",
    "nika_tui.errors",
)


def _nika_imports(path: Path) -> set[str]:
    """Every ``nika_tui`` module ``path`` imports, at module level or inside a function."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return {m for m in out if m.startswith("nika_tui")}


@pytest.mark.parametrize(
    "path",
    sorted([*(UI / "screens").glob("*.py"), *(UI / "widgets").glob("*.py")]),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_screens_and_widgets_import_no_app_and_no_adapter(path: Path) -> None:
    imports = _nika_imports(path)
    assert not {m for m in imports if not m.startswith(ALLOWED)}
