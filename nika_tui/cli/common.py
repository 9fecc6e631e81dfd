"""Shared CLI plumbing: error printing, JSON output, exit codes."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from nika_tui.errors import NikaError

Handler = Callable[[argparse.Namespace], int]


def run_handler(handler: Handler, args: argparse.Namespace) -> int:
    """Run one command; print :class:`NikaError` as one line (+ hint) and return its code."""
    try:
        _bind_tenant(args)
        return handler(args)
    except NikaError as exc:
        if getattr(args, "json", False):
            payload = {"error": exc.message, "hint": exc.hint}
            print(json.dumps(payload), file=sys.stderr)
        else:
            print(f"error: {exc.message}", file=sys.stderr)
            if exc.hint:
                print(f"hint: {exc.hint}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted: nothing was written", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `nika … | head` closed our stdout: not an error of ours. Point stdout at devnull so
        # the interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def _bind_tenant(args: argparse.Namespace) -> None:
    """Inside a kernel, ``--tenant`` defaults to (and must be) the kernel's own tenant."""
    if "tenant" not in vars(args) or not (args.tenant is None or isinstance(args.tenant, str)):
        return
    from nika_tui.domain.tenant_binding import resolve_tenant

    args.tenant = resolve_tenant(args.tenant, os.environ)


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    """Every command has ``--json``."""
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def print_json(data: Any) -> None:
    """Print ``data`` as JSON on stdout."""
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
