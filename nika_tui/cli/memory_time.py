"""``nika memory timeline --tenant T QUERY``: how a fact changed (each version, when, what
replaced it and why). Registered under ``nika memory`` by :mod:`nika_tui.cli.memory`."""

from __future__ import annotations

import argparse
from typing import Any

from pydantic import ValidationError

from nika_tui.cli.common import add_json_flag, print_json, settings_of
from nika_tui.domain.envelope import explain_validation_error
from nika_tui.domain.requests import MAX_RECALL_LIMIT, RecallQuery
from nika_tui.domain.timeline import format_timelines
from nika_tui.errors import ValidationFailed


def register_timeline(msub: argparse._SubParsersAction[Any]) -> None:
    """Add ``nika memory timeline``."""
    tl = msub.add_parser("timeline", help="how a fact changed: each version, when, why")
    tl.add_argument("--tenant", required=True, help="tenant id")
    tl.add_argument("--project", default=None, help="only this project")
    tl.add_argument(
        "--limit", type=int, default=3, help=f"facts to trace, 1-{MAX_RECALL_LIMIT} (default 3)"
    )
    tl.add_argument("query", nargs="+", help="the fact to trace (words, not an id)")
    add_json_flag(tl)
    tl.set_defaults(handler=timeline_cmd)


def timeline_cmd(args: argparse.Namespace) -> int:
    """Trace the facts the query names through the running service."""
    from nika_tui.services.config_store import load_tenant
    from nika_tui.services.memory_client import MemoryClient

    load_tenant(args.tenant, settings_of(args).roots)
    try:
        q = RecallQuery(
            tenant_id=args.tenant,
            query=" ".join(args.query).strip() or " ",
            project_id=args.project,
            limit=args.limit,
            include_retired=True,
        )
    except ValidationError as exc:
        raise ValidationFailed(
            explain_validation_error(exc), "see `nika memory timeline --help`"
        ) from None
    out = MemoryClient.open(settings_of(args)).timeline(q)
    if args.json:
        print_json(out)
    else:
        print("\n".join(format_timelines(out)))
    return 0
