"""``nika tenant list``: configured tenants with plan, agent CLI, privacy and strategies."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from nika_tui.cli.common import add_json_flag, print_json, settings_of
from nika_tui.domain.strategies import available_strategies
from nika_tui.errors import ConfigError, ValidationFailed
from nika_tui.paths import Roots
from nika_tui.services.config_store import list_tenant_ids, load_tenant


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``nika tenant list``."""
    p = sub.add_parser("tenant", help="configured tenants")
    tsub = p.add_subparsers(dest="tenant_command", metavar="ACTION")
    ls = tsub.add_parser("list", help="list tenants with plan, CLI, privacy and strategies")
    add_json_flag(ls)
    ls.set_defaults(handler=run_list)
    p.set_defaults(handler=_need_action)


def _need_action(args: argparse.Namespace) -> int:
    raise ValidationFailed("missing action", "use `nika tenant list`")


def tenant_rows(where: Roots) -> list[dict[str, Any]]:
    """One row per tenant under ``where``; a config that cannot be read gets an ``error``."""
    rows: list[dict[str, Any]] = []
    for tid in list_tenant_ids(where):
        try:
            c = load_tenant(tid, where)
        except (ConfigError, ValidationFailed) as exc:
            rows.append({"tenant_id": tid, "error": exc.message, "hint": exc.hint})
            continue
        rows.append(
            {
                "tenant_id": c.tenant_id,
                "display_name": c.display_name,
                "plan": c.plan.value,
                "agent_cli": c.agent_cli.value,
                "privacy": c.privacy.value,
                "providers": [p.value for p in c.providers],
                "strategies": [str(s) for s in available_strategies(c)],
            }
        )
    return rows


def run_list(args: argparse.Namespace) -> int:
    """Print the tenants; exit 1 when a config cannot be read (it is reported, not hidden)."""
    rows = tenant_rows(settings_of(args).roots)
    broken = [r for r in rows if "error" in r]
    if args.json:
        print_json({"tenants": rows})
    elif not rows:
        print("no tenant yet: create one with `nika setup`")
    else:
        print(f"{'TENANT':<16} {'PLAN':<11} {'AGENT CLI':<12} {'PRIVACY':<8} STRATEGIES")
        for r in rows:
            if "error" in r:
                continue
            strategies = ", ".join(r["strategies"]) or "-"
            print(
                f"{r['tenant_id']:<16} {r['plan']:<11} {r['agent_cli']:<12} {r['privacy']:<8} "
                f"{strategies}"
            )
    for r in broken:
        print(f"error: {r['error']}\nhint: {r['hint']}", file=sys.stderr)
    return 1 if broken else 0
