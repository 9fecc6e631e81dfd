"""The ``nika`` command. One module per command group; each exposes ``register(subparsers)``.

Modules import their heavy dependencies (textual, torch, qdrant) inside the handlers so that
hooks and ``--help`` start fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from nika_tui import __version__
from nika_tui.cli.common import run_handler

# Order is the order of ``nika --help``.
GROUPS: tuple[str, ...] = (
    "setup",
    "doctor",
    "tenant",
    "service",
    "memory",
    "review",
    "confirm",
    "judge",
    "kernel",
    "bridge",
    "hook",
    "context",
    "mcp",
    "demo",
    "debt",
    "dashboard",
    "scale",
    "quota",
    "billing",
)


# Commands that run inside an agent's hook timeout: parse them with only their own group, so a
# hook does not pay for importing every other command's module.
FAST_PATHS: dict[str, tuple[str, ...]] = {"hook": ("hook",)}


def build_parser(groups: Sequence[str] = GROUPS) -> argparse.ArgumentParser:
    """The argument parser with ``groups`` registered (all of them by default)."""
    parser = argparse.ArgumentParser(
        prog="nika",
        description="nika-os: one shared, current memory for every AI coding agent of a tenant.",
    )
    parser.add_argument("--version", action="version", version=f"nika-os {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in groups:
        module = importlib.import_module(f"nika_tui.cli.{name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    # Bare `nika` opens the dashboard: its first frame should not wait for other commands.
    groups = FAST_PATHS.get(arguments[0], GROUPS) if arguments else ("dashboard",)
    parser = build_parser(groups)
    args = parser.parse_args(arguments)
    if getattr(args, "handler", None) is None:
        from nika_tui.cli.dashboard import default_entry

        return run_handler(default_entry, args)
    return run_handler(args.handler, args)
