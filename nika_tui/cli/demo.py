"""``nika demo``: a demo tenant with a replayed agent session, for a first look."""

from __future__ import annotations

import argparse
from typing import Any

from nika_tui.cli.common import add_json_flag, print_json, settings_of


def _handle(args: argparse.Namespace) -> int:
    from nika_tui.demo import DEMO_TENANT_ID, create_demo_tenant

    if args.speed <= 0:
        from nika_tui.errors import ValidationFailed

        raise ValidationFailed("--speed must be above 0", "e.g. --speed 2 plays twice as fast")
    config = create_demo_tenant(args.speed, settings_of(args).roots)
    out: dict[str, Any] = {
        "tenant_id": config.tenant_id,
        "display_name": config.display_name,
        "demo": True,
        "speed": args.speed,
        "spawned": False,
    }
    if not args.no_service:
        from nika_tui.cli.service import up_cmd

        up_cmd(argparse.Namespace(json=False, timeout=args.timeout))
    if not args.no_spawn:
        from nika_tui.engine.kernels.manager import KernelManager

        result = KernelManager(settings_of(args)).spawn(DEMO_TENANT_ID)
        out.update(spawned=result.spawned, session=result.session, message=result.message)
    if args.json:
        print_json(out)
        return 0
    print(f"DEMO tenant {config.tenant_id!r} ({config.display_name}) is ready.")
    if out["spawned"] or out.get("message"):
        print(f"DEMO {out.get('message', '')}")
        print(
            f"Watch it in the dashboard (`nika`) or attach with `nika kernel attach "
            f"{DEMO_TENANT_ID}`; the replay takes about {180 / args.speed:.0f} s."
        )
    return 0


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """``nika demo [--speed F] [--no-service] [--no-spawn] [--json]``."""
    parser = sub.add_parser(
        "demo",
        help="a DEMO tenant whose kernel replays a Claude Code session (no agent CLI needed)",
        description="Create the demo tenant and start its kernel: a replay agent writes a "
        "realistic Claude Code transcript and fires the real hooks (fill past 61%, a "
        "compaction, a contradiction in the review queue). Starts the memory service if needed.",
    )
    parser.add_argument("--speed", type=float, default=1.0, help="replay speed factor (default 1)")
    parser.add_argument("--no-service", action="store_true", help="do not start the service")
    parser.add_argument("--no-spawn", action="store_true", help="only create the tenant")
    parser.add_argument("--timeout", type=float, default=120.0, help=argparse.SUPPRESS)
    add_json_flag(parser)
    parser.set_defaults(handler=_handle)
