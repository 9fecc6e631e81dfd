"""``nika hook claude EVENT`` / ``nika hook codex EVENT``: agent hooks (payload on stdin).

Codex's ``notify`` program receives its JSON as the last argument:
``nika hook codex notify '{"type": "agent-turn-complete", …}'``. Always exits 0: a hook never
breaks the agent (failures go to ``{data}/logs/hooks.log``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from nika_tui.hooks.context import MAX_PAYLOAD_BYTES


def _handle(args: argparse.Namespace) -> int:
    from nika_tui.hooks.dispatch import run_hook

    raw: bytes | str | None
    if args.payload is not None:
        raw = args.payload
    elif sys.stdin is None or sys.stdin.isatty():
        raw = None
    else:
        # One byte over the limit is enough to know it is too big (run_hook refuses it).
        raw = sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)
    output = run_hook(args.cli, args.event, raw)
    if output:
        sys.stdout.write(output + "\n")
        sys.stdout.flush()
    return 0


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """``nika hook CLI EVENT [PAYLOAD]``."""
    parser = sub.add_parser(
        "hook",
        help="agent hooks (installed into the tenant's agent CLI by `nika kernel spawn`)",
        description="Handle one agent hook event. The JSON payload is read from stdin "
        "(or given as PAYLOAD, as Codex's notify program does). Always exits 0.",
    )
    parser.add_argument(
        "cli", choices=("claude", "codex", "gemini", "opencode"), help="which agent CLI calls"
    )
    parser.add_argument("event", help="SessionStart, UserPromptSubmit, PreCompact, Stop, …")
    parser.add_argument("payload", nargs="?", default=None, help="JSON payload (Codex notify)")
    parser.set_defaults(handler=_handle)
