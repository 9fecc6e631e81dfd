"""Shared CLI plumbing: error printing, JSON output, exit codes."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nika_tui.errors import NikaError, ValidationFailed

if TYPE_CHECKING:
    from nika_tui.settings import Settings

Handler = Callable[[argparse.Namespace], int]


def run_handler(handler: Handler, args: argparse.Namespace) -> int:
    """Run one command; print :class:`NikaError` as one line (+ hint) and return its code."""
    try:
        settings_of(args)  # once per command: its handler and the connections read these
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

    settings = settings_of(args)
    args.tenant = resolve_tenant(args.tenant, settings.tenant_id, settings.operator)


def settings_of(args: argparse.Namespace) -> Settings:
    """The settings of this command, built once from the process environment by
    :func:`run_handler` (here, when a test calls a handler itself). ``nika serve`` builds its
    own after its ``--env-file``."""
    settings: Settings | None = getattr(args, "settings", None)
    if settings is None:
        from nika_tui.settings import Settings

        settings = Settings.from_env()
        args.settings = settings
    return settings


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    """Every command has ``--json``."""
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def print_json(data: Any) -> None:
    """Print ``data`` as JSON on stdout."""
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def parse_seed(raw: str | None) -> int | None:
    """``--seed``'s value as an int in 0 … 2³² − 1 (None when not given).

    Parsed here, not by argparse, so a bad value is our one-line error and hint, exit 2.

    Raises:
        ValidationFailed: not a whole number, or out of range.
    """
    from nika_tui.domain.recall_params import SEED_MAX, seed_problem

    if raw is None:
        return None
    hint = "e.g. --seed 7 (the same seed repeats the same run)"
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValidationFailed(
            f"--seed must be a whole number from 0 to {SEED_MAX}, got {raw!r}", hint
        ) from None
    problem = seed_problem(value)
    if problem is not None:
        raise ValidationFailed(problem, hint)
    return value
