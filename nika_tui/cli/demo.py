"""Placeholder: this command group is being built (see the open issues)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Nothing registered yet."""
