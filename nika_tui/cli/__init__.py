"""The ``nika`` command. One module per command group; each exposes ``register(subparsers)``.

Modules import their heavy dependencies (textual, torch, qdrant) inside the handlers so that
hooks and ``--help`` start fast.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from nika_tui import __version__

if TYPE_CHECKING:
    import argparse

# Order is the order of ``nika --help``.
GROUPS: tuple[str, ...] = (
    "setup",
    "doctor",
    "tenant",
    "service",
    "memory",
    "review",
    "import_cmd",
    "confirm",
    "judge",
    "kernel",
    "bridge",
    "hook",
    "context",
    "mcp",
    "demo",
    "debt",
    "compress",
    "automemory",
    "tune",
    "dashboard",
    "scale",
    "quota",
    "billing",
)


# Commands that run inside an agent's hook timeout, or whose first prompt a person waits for
# (`setup` from the welcome screen): parse them with only their own group, so they do not pay
# for importing every other command's module.
FAST_PATHS: dict[str, tuple[str, ...]] = {"hook": ("hook",), "setup": ("setup",)}


def build_parser(groups: Sequence[str] = GROUPS) -> argparse.ArgumentParser:
    """The argument parser with ``groups`` registered (all of them by default)."""
    # Imported here: a hook (the fast path in :func:`main`) needs neither.
    import argparse
    import importlib

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
    # Everything nika creates under its config and data dirs (bus, shards, logs, spool) is
    # private by default: 0600 files, 0700 dirs, whatever the library that writes them.
    # Restored on return, for callers that run `main` in-process (tests, scripts).
    previous = os.umask(0o077)
    try:
        return _main(argv)
    finally:
        os.umask(previous)


def _main(argv: Sequence[str] | None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    from nika_tui.hookd.client import is_fast_call

    if is_fast_call(arguments):
        from nika_tui.hookd.client import main as hook_main

        return hook_main(arguments[1:])
    # Bare `nika` opens the dashboard: its first frame should not wait for other commands.
    groups = FAST_PATHS.get(arguments[0], GROUPS) if arguments else ("dashboard",)
    parser = build_parser(groups)
    args = parser.parse_args(arguments)
    from nika_tui.cli.common import run_handler

    if getattr(args, "handler", None) is None:
        from nika_tui.cli.dashboard import default_entry

        return run_handler(default_entry, args)
    return run_handler(args.handler, args)
