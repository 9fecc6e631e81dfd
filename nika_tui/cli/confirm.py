"""``nika confirm list|approve|reject --tenant T [ID]``: decisions waiting for a person."""

from __future__ import annotations

import argparse
from typing import Any

from nika_tui.cli.common import add_json_flag, print_json, settings_of


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``nika confirm``."""
    parser = sub.add_parser(
        "confirm", help="actions waiting for your decision (escalate mode: compact, REM, purge…)"
    )
    parser.add_argument("action", choices=["list", "approve", "reject"])
    parser.add_argument("id", nargs="?", help="confirmation id (approve / reject)")
    parser.add_argument("--tenant", required=True)
    parser.add_argument("--all", action="store_true", help="list resolved ones too")
    add_json_flag(parser)
    parser.set_defaults(handler=_confirm)


def _confirm(args: argparse.Namespace) -> int:
    from nika_tui.engine.kernels.confirmations import list_confirmations, resolve
    from nika_tui.errors import ValidationFailed
    from nika_tui.services.config_store import load_tenant
    from nika_tui.services.redis_server import connect

    load_tenant(args.tenant, settings_of(args).roots)  # unknown tenant → clear error
    client = connect(
        settings_of(args), start=False
    )  # stopped means stopped: "not reachable", never a restart
    if args.action == "list":
        items = list_confirmations(client, args.tenant, include_resolved=args.all)
        if args.json:
            print_json(items)
        elif not items:
            print(f"nothing waits for a decision in {args.tenant}")
        for item in [] if args.json else items:
            print(
                f"{item['id'][:12]}  {item.get('status', ''):9} {item.get('kind', ''):22} "
                f"{item.get('title', '')}"
            )
        return 0
    if not args.id:
        raise ValidationFailed(
            f"`nika confirm {args.action}` needs a confirmation id",
            f"list them with `nika confirm list --tenant {args.tenant}`",
        )
    matches = [
        i["id"] for i in list_confirmations(client, args.tenant) if str(i["id"]).startswith(args.id)
    ]
    if len(matches) != 1:
        raise ValidationFailed(
            f"{len(matches)} pending confirmations match {args.id!r}",
            f"give more of the id (`nika confirm list --tenant {args.tenant}`)",
        )
    approve = args.action == "approve"
    out = resolve(client, args.tenant, matches[0], approve, settings=settings_of(args))
    if args.json:
        print_json(out)
    else:
        line = f"{out['status']} {out['id'][:12]} ({out['kind']})"
        result = out.get("result")
        if isinstance(result, dict) and str(out["kind"]).startswith("debt."):
            from nika_tui.domain.debt_results import describe_result

            line += ": " + describe_result(str(out["kind"]), result.get("result", result))
        print(line)
    return 0
