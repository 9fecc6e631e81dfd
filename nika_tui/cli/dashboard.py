"""``nika`` with no command: the dashboard, or the wizard first when no tenant exists."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """``nika web`` is registered here once the dashboard exists."""


def default_entry(args: argparse.Namespace) -> int:
    """Until the dashboard lands: run the wizard when no tenant exists, then ``nika doctor``."""
    from nika_tui.cli import main
    from nika_tui.services.config_store import list_tenant_ids

    if not list_tenant_ids():
        code = main(["setup"])
        if code != 0:
            return code
    return main(["doctor"])
