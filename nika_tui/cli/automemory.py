"""``nika automemory sync --tenant T [--project P] [--workdir DIR] --json`` (docs/automemory.md)."""

from __future__ import annotations

import argparse
from typing import Any

from nika_tui.cli.common import add_json_flag, print_json, settings_of

SYNC_TIMEOUT_S = 120.0
"""Imports are ingested (embedded and judged) before the reply: allow for a cold start."""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``nika automemory …``."""
    parser = sub.add_parser("automemory", help="the agents' native auto-memory, kept in sync")
    asub = parser.add_subparsers(dest="automemory_command", metavar="ACTION", required=True)
    sync = asub.add_parser(
        "sync", help="write current memories to MEMORY.md / AGENTS.md, import what agents wrote"
    )
    sync.add_argument("--tenant", required=True, help="tenant id")
    sync.add_argument("--project", default=None, help="only this project (and no-project facts)")
    sync.add_argument(
        "--workdir", default=None, help="the agent's working directory (default: kernel.workdir)"
    )
    add_json_flag(sync)
    sync.set_defaults(handler=sync_cmd)


def sync_cmd(args: argparse.Namespace) -> int:
    """Run one sync in the memory service (the single writer ingests the imports)."""
    from pathlib import Path

    from nika_tui.domain.protocol_requests import AutomemorySyncRequest
    from nika_tui.errors import ValidationFailed
    from nika_tui.services.config_store import load_tenant
    from nika_tui.services.memory_client import MemoryClient

    load_tenant(args.tenant, settings_of(args).roots)
    workdir = str(Path(args.workdir).expanduser().resolve()) if args.workdir else None
    if workdir and not Path(workdir).is_dir():  # the service refuses it too; no need to ask
        raise ValidationFailed(
            f"--workdir {args.workdir} is not a directory", "pass the agent's working directory"
        )
    request = AutomemorySyncRequest(args.tenant, args.project, workdir)
    result = MemoryClient.open(settings_of(args)).send(request, timeout=SYNC_TIMEOUT_S).to_body()
    if args.json:
        print_json(result)
        return 0
    for target in result.get("targets", []):
        print(
            f"{target['target']}: {target['path']}\n"
            f"  written {len(target['written'])}, removed {len(target['removed'])}, "
            f"imported {len(target['imported'])}, hand edits kept {len(target['kept_edits'])}, "
            f"superseded {len(target['superseded'])}, not indexed {target['not_indexed']}"
        )
    return 0
