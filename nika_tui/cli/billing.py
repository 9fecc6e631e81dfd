"""``nika billing report --tenant T [--since DATE]`` and ``nika billing prices [--init]``."""

from __future__ import annotations

import argparse
from datetime import date
from typing import Any

from nika_tui.cli.common import add_json_flag, print_json, settings_of


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``nika billing``."""
    parser = sub.add_parser("billing", help="tool calls and tokens per tenant, cost by model/day")
    parser.add_argument("action", choices=["report", "prices"])
    parser.add_argument("--tenant", help="tenant id (report)")
    parser.add_argument("--since", help="first UTC day included, YYYY-MM-DD")
    parser.add_argument(
        "--init", action="store_true", help="prices: write the default table to edit"
    )
    add_json_flag(parser)
    parser.set_defaults(handler=_billing)


def _since(raw: str | None) -> date | None:
    from nika_tui.errors import ValidationFailed

    if raw is None:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError as exc:
        raise ValidationFailed(f"--since {raw!r} is not a date", "use YYYY-MM-DD") from exc


def _billing(args: argparse.Namespace) -> int:
    from nika_tui.billing.log import BillingLog
    from nika_tui.billing.prices import DEFAULT_PRICES, load_prices, prices_path, render_prices
    from nika_tui.billing.report import build_report
    from nika_tui.errors import ValidationFailed
    from nika_tui.services.config_store import load_tenant
    from nika_tui.services.files import atomic_write_text

    where = settings_of(args).roots
    if args.action == "prices":
        path = prices_path(where)
        if args.init:
            if path.exists():
                raise ValidationFailed(f"{path} exists", "edit it, or move it away first")
            atomic_write_text(path, render_prices(DEFAULT_PRICES))
        table = load_prices(where)
        out: dict[str, Any] = {"path": str(path), "custom": path.exists(), **table.model_dump()}
        if args.json:
            print_json(out)
        else:
            print(f"{path} ({'custom' if out['custom'] else 'defaults'}), {table.currency}/Mtok")
            for model, price in table.models.items():
                print(f"  {model:22} in {price.input:<7} out {price.output:<7} "
                      f"cache r {price.cache_read:<6} w {price.cache_write}")  # fmt: skip
        return 0
    if not args.tenant:
        raise ValidationFailed("`nika billing report` needs --tenant", "add --tenant T")
    config = load_tenant(args.tenant, where)
    prices = load_prices(where)
    report = build_report(
        config.tenant_id, BillingLog(config.tenant_id, where).entries(), prices, _since(args.since)
    )
    if args.json:
        print_json(report)
        return 0
    total = report["total"]
    print(f"{config.tenant_id}: {total['tokens']} tokens, {total['cost']:.4f} "
          f"{report['currency']}, {report['tool_calls']} tool calls")  # fmt: skip
    for model, b in report["by_model"].items():
        print(f"  {model:30} {b['tokens']:>12} tokens  {b['cost']:.4f}")
    for day, b in report["by_day"].items():
        print(f"  {day}  {b['tokens']:>12} tokens  {b['cost']:.4f}")
    return 0
