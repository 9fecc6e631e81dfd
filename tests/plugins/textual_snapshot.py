"""Textual's snapshot plugin (``pytest-textual-snapshot``), loaded when a test first uses it.

The plugin imports ``textual.app``, ``rich``, ``jinja2`` and ``syrupy``'s extensions at load,
about a second of every pytest start, even to collect one domain test. ``pyproject.toml``
disables its autoload (``-p no:textual-snapshot``) and this stand-in gives the same fixture and
report: ``snap_compare`` is the plugin's own fixture function, imported on first use; the
plugin's session hooks run only if a snapshot was taken (no snapshot, no report to write).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import PurePath
from types import ModuleType
from typing import Any

import pytest

_PLUGIN = "pytest_textual_snapshot"


def pytest_addoption(parser: pytest.Parser) -> None:
    """The plugin's option, declared here since the plugin itself loads late."""
    parser.addoption(
        "--snapshot-report",
        action="store",
        default="snapshot_report.html",
        help="Snapshot test output HTML path.",
    )


def _loaded() -> ModuleType | None:
    return sys.modules.get(_PLUGIN)


@pytest.fixture
def snap_compare(snapshot: Any, request: pytest.FixtureRequest) -> Callable[..., bool]:
    """The plugin's ``snap_compare`` (compare an app's screen with its stored SVG)."""
    first = _loaded() is None
    import pytest_textual_snapshot as plugin

    if first:
        plugin.pytest_sessionstart(request.session)  # its temp dir for the failure report
    compare: Callable[..., Callable[[str | PurePath], bool]]
    compare = plugin.snap_compare._get_wrapped_function()
    return compare(snapshot, request)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The plugin's report of mismatched snapshots, when any snapshot was taken."""
    plugin = _loaded()
    if plugin is not None:
        plugin.pytest_sessionfinish(session, exitstatus)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The plugin's link to that report."""
    plugin = _loaded()
    if plugin is not None:
        plugin.pytest_terminal_summary(terminalreporter, exitstatus, config)
