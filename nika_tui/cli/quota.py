"""``nika quota status|resume --tenant T``: CPU / RAM (cgroups) and tokens per day."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from nika_tui.cli.common import add_json_flag, print_json, settings_of

if TYPE_CHECKING:
    from nika_tui.settings import Settings


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``nika quota``."""
    parser = sub.add_parser("quota", help="per-tenant quotas: CPU, RAM (cgroups), tokens per day")
    parser.add_argument("action", choices=["status", "resume"])
    parser.add_argument("--tenant", required=True)
    add_json_flag(parser)
    parser.set_defaults(handler=_quota)


def _quota(args: argparse.Namespace) -> int:
    from nika_tui.quota.cgroups import TenantCgroup, detect
    from nika_tui.quota.tokens import resume_kernel
    from nika_tui.services.config_store import load_tenant
    from nika_tui.services.redis_server import connect

    settings = settings_of(args)
    config = load_tenant(args.tenant, settings.roots)
    now = datetime.now(UTC)
    if args.action == "resume":
        client = connect(settings, start=False)
        pids = resume_kernel(client, config.tenant_id, now, settings.roots)
        out: dict[str, Any] = {"tenant_id": config.tenant_id, "resumed_pids": pids}
    else:
        support = detect()
        group = TenantCgroup(config.tenant_id, support)
        exists = any(d.is_dir() for d in group.dirs.values())
        out = {
            "tenant_id": config.tenant_id,
            "cpu_percent": config.quotas.cpu_percent,
            "ram_mb": config.quotas.ram_mb,
            "cgroup": {
                **support.as_dict(),
                "name": group.name,
                "exists": exists,
                "read_back": group.read() if exists else {},
                "pids": group.procs() if exists else [],
            },
            "tokens": _tokens(config, now, settings_of(args)),
        }
    if args.json:
        print_json(out)
    elif args.action == "resume":
        print(f"resumed {len(out['resumed_pids'])} process(es) of {config.tenant_id}")
    else:
        cg, tok = out["cgroup"], out["tokens"]
        print(f"{config.tenant_id}: cpu {out['cpu_percent']}%  ram {out['ram_mb']} MB  "
              f"cgroup {cg['mode']} ({'active' if cg['exists'] else 'no kernel'})")  # fmt: skip
        if "error" in tok:
            print(f"tokens today: unknown ({tok['error']})")
        else:
            print(f"tokens today {tok['used']}/{tok['limit']} ({tok['percent']}%) {tok['state']}")
    return 0


def _tokens(config: Any, now: datetime, settings: Settings) -> dict[str, Any]:
    """Today's token status; without Redis the cgroup part is still worth showing."""
    from nika_tui.errors import StoreUnavailable
    from nika_tui.quota.tokens import token_status
    from nika_tui.services.redis_server import connect

    try:
        return token_status(connect(settings, start=False), config, now)
    except StoreUnavailable as exc:
        return {"error": exc.message, "limit": config.quotas.tokens_per_day}
