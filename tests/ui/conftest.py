"""Fixtures for the dashboard tests: the fixture source and apps built by the real factory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nika_tui.dashboard.fixture_source import DEMO_SNAPSHOT, FixtureSource
from nika_tui.settings import Settings
from nika_tui.ui.app import NikaDashboard, make_app

SIZE = (140, 36)
"""Terminal size of every Pilot test and snapshot."""


@pytest.fixture
def fixture_source() -> FixtureSource:
    """The bundled demo snapshot (fixed clock), attach argv ``true``."""
    return FixtureSource.from_file(DEMO_SNAPSHOT)


@pytest.fixture
def build_app(isolated_env: dict[str, str], tmp_path: Path) -> Callable[..., NikaDashboard]:
    """``build_app(source, **kw)``: the App from ``make_app`` with the source's fixed clock."""

    def build(source: Any, **kw: Any) -> NikaDashboard:
        clock = kw.pop("clock", None) or (lambda: source.now)
        kw.setdefault("show_welcome", False)
        kw.setdefault("settings_file", tmp_path / "ui.yaml")
        return make_app(Settings.from_env(isolated_env), source=source, clock=clock, **kw)

    return build
