"""The dashboard's own small settings file: ``{config}/ui.yaml`` (0600), e.g. the theme.

It holds presentation choices only, never secrets. An unreadable file is ignored (defaults),
never overwritten until the person changes a setting again.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nika_tui.paths import Roots, roots
from nika_tui.services.files import atomic_write_text

DEFAULT_THEME = "textual-dark"


class UiSettings(BaseModel):
    """Presentation choices persisted between runs."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    theme: str = Field(default=DEFAULT_THEME, description="Textual theme name.")
    refresh_s: float = Field(default=1.0, ge=0.2, le=60, description="Overview poll interval.")


def settings_path(where: Roots | None = None) -> Path:
    """``{config}/ui.yaml``."""
    return (where or roots()).config / "ui.yaml"


def load_ui_settings(path: Path) -> UiSettings:
    """Read the settings; defaults when the file is missing or unreadable."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        return UiSettings.model_validate(raw or {})
    except (OSError, yaml.YAMLError, ValidationError):
        return UiSettings()


def save_ui_settings(path: Path, settings: UiSettings) -> None:
    """Write the settings atomically (0600)."""
    atomic_write_text(path, yaml.safe_dump(settings.model_dump(mode="json"), sort_keys=False))
