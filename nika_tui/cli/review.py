"""``nika review list | approve | reject --tenant T [ID]``: resolve UNCERTAIN supersede pairs.

Approve = REPLACE (the old memory is retired, superseded by the new one); reject = KEEP both.
Decisions are applied by the memory service (the single writer) and logged on the bus.
"""

from __future__ import annotations

import argparse
from typing import Any

from nika_tui.cli.common import add_json_flag, print_json, settings_of


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``nika review …``."""
    review = sub.add_parser("review", help="the supersede review queue (UNCERTAIN pairs)")
    rsub = review.add_subparsers(dest="review_command", metavar="ACTION", required=True)

    lst = rsub.add_parser("list", help="pending pairs")
    lst.add_argument("--tenant", required=True, help="tenant id")
    lst.add_argument("--all", action="store_true", help="also resolved pairs")
    add_json_flag(lst)
    lst.set_defaults(handler=list_cmd)

    for name, help_text in (
        ("approve", "the new fact replaces the old one (old is retired)"),
        ("reject", "both facts stay current"),
    ):
        p = rsub.add_parser(name, help=help_text)
        p.add_argument("--tenant", required=True, help="tenant id")
        p.add_argument("id", help="review id from `nika review list`")
        p.add_argument("--note", default="", help="why (kept with the decision)")
        add_json_flag(p)
        p.set_defaults(handler=resolve_cmd, decision=name)


def list_cmd(args: argparse.Namespace) -> int:
    """Print the pending (or all) review items."""
    from nika_tui.services.config_store import load_tenant
    from nika_tui.services.memory_client import MemoryClient

    load_tenant(args.tenant, settings_of(args).roots)
    items = MemoryClient.open(settings_of(args)).review_list(args.tenant, include_resolved=args.all)
    if args.json:
        print_json({"tenant_id": args.tenant, "items": items})
        return 0
    if not items:
        print("no pending review")
        return 0
    for item in items:
        print(f"{item['id']}  {item['status']}  judge {item['judge']}: {item['reason']}")
        print(f"    old {item['old_id']} (valid {item['old_valid_from'][:16]}): {item['old_text']}")
        print(f"    new {item['new_id']} (valid {item['new_valid_from'][:16]}): {item['new_text']}")
    print(
        f"approve (new replaces old) or reject (keep both): nika review approve|reject "
        f"--tenant {args.tenant} ID"
    )
    return 0


def resolve_cmd(args: argparse.Namespace) -> int:
    """Approve or reject one item."""
    from nika_tui.services.config_store import load_tenant
    from nika_tui.services.memory_client import MemoryClient

    load_tenant(args.tenant, settings_of(args).roots)
    item = MemoryClient.open(settings_of(args)).review_resolve(
        args.tenant, args.id, args.decision, args.note
    )
    if args.json:
        print_json({"tenant_id": args.tenant, "item": item})
    elif item["status"] == "approved":
        print(f"{item['id']} approved: {item['old_id']} retired, superseded by {item['new_id']}")
    else:
        print(f"{item['id']} rejected: both memories stay current")
    return 0
