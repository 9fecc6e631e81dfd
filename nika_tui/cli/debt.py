"""``nika audit``, ``nika purge plan|apply|restore`` and ``nika rem run`` (memory debt).

When the memory service runs, each command is an RPC to it (it is the single writer and holds
the stores open). When it does not, the command opens the stores itself: these maintenance
passes work on stored vectors only and never load the embedding model.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nika_tui.cli.common import add_json_flag, parse_seed, print_json, settings_of
from nika_tui.domain import protocol_requests as req
from nika_tui.domain.protocol_codec import Request
from nika_tui.engine.builder import build_local_context
from nika_tui.errors import ServiceNotRunning, ValidationFailed
from nika_tui.settings import Settings

if TYPE_CHECKING:
    pass

RPC_TIMEOUT_S = 1800.0
"""A full audit at 413k points takes ~30 s; a first REM pass on a big tenant can take minutes."""


def run_op(request: Request[Any], settings: Settings) -> Any:
    """Through the service when it runs, else locally on the stores (the service's own
    handler of the op, on a local engine context).

    Returns:
        The operation's result (its reply's body).
    """
    # Raw on purpose: the local stores read the Qdrant key from it when they send it (a
    # secret, never a setting).
    env = dict(os.environ)
    from nika_tui.services.memory_client import MemoryClient

    try:
        client = MemoryClient.open(settings)
        if client.service_alive():
            from nika_tui.services.tenant_calls import call_per_tenant

            # The service answers one named tenant per request (engine/tenant_scope.py).
            return call_per_tenant(
                client, request.OP, request.to_body(), RPC_TIMEOUT_S, settings.roots
            )
    except ServiceNotRunning:
        pass  # no Redis yet: run locally (it starts the embedded one)
    from nika_tui.engine.server.rpc import build_rpc_table

    ctx = build_local_context(env, settings)
    try:
        return build_rpc_table()[request.OP](ctx, request).to_body()
    finally:
        ctx.vectors.close()


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``nika audit``, ``nika purge``, ``nika rem`` (``nika compress``: cli/compress.py)."""
    audit = sub.add_parser("audit", help="memory-debt metrics against their thresholds")
    audit.add_argument("--tenant", default=None, help="one tenant (default: every tenant)")
    audit.add_argument("--sample", type=int, default=1000, help="points sampled for duplicates")
    audit.add_argument("--seed", default=None, help="random seed (reproducible), 0 … 2^32-1")
    audit.add_argument(
        "--no-act", action="store_true", help="measure and record only: no action, no pause"
    )
    add_json_flag(audit)
    audit.set_defaults(handler=_audit)

    purge = sub.add_parser("purge", help="remove retired memories safely (archive first)")
    psub = purge.add_subparsers(dest="purge_command", metavar="ACTION", required=True)
    for name, helptext, fn in (
        ("plan", "what would leave the live index, with replacements", _purge_plan),
        ("apply", "apply the plan (needs --yes unless auto-purge is autonomous)", _purge_apply),
        ("restore", "put archived memories back", _purge_restore),
    ):
        p = psub.add_parser(name, help=helptext)
        p.add_argument("--tenant", required=True, help="tenant id")
        if name != "restore":
            p.add_argument("--retention-days", type=float, default=None, help="default 30")
        if name == "apply":
            p.add_argument("--yes", action="store_true", help="confirm the purge")
        if name != "plan":
            p.add_argument("--id", action="append", default=None, help="only this id (repeat)")
        add_json_flag(p)
        p.set_defaults(handler=fn)

    rem = sub.add_parser("rem", help="the REM consolidation pass")
    rsub = rem.add_subparsers(dest="rem_command", metavar="ACTION", required=True)
    run = rsub.add_parser("run", help="merge, re-judge, retire obsolete, promote (never deletes)")
    run.add_argument("--tenant", default=None, help="one tenant (default: every tenant)")
    run.add_argument(
        "--all", action="store_true", help="consider every memory, not only the last day's"
    )
    add_json_flag(run)
    run.set_defaults(handler=_rem_run)


def _status_line(m: Mapping[str, Any]) -> str:
    value = m.get("value")
    shown = "no data" if value is None else f"{value:.4g}"
    ci = m.get("ci")
    interval = f" [{ci[0]:.3g}, {ci[1]:.3g}]" if ci else ""
    # An insufficient metric says why (n and the minimum) instead of a bare sample size.
    sample = m.get("note") or f"n={m['sample_size']}"
    return (
        f"  {m['status']:<12} {m['name']:<24} {shown:>10}{interval}  "
        f"threshold {m['threshold']:g} {m['unit']}  ({sample})"
    )


def _audit(args: argparse.Namespace) -> int:
    if args.sample < 1:
        raise ValidationFailed("--sample must be at least 1", "e.g. --sample 1000")
    seed = parse_seed(args.seed)
    result = run_op(
        req.AuditRequest(args.tenant or None, args.sample, not args.no_act, seed), settings_of(args)
    )
    if args.json:
        print_json(result)
        return 0
    for tenant_id, rep in result["tenants"].items():
        flag = "  CRITICAL" if rep.get("critical") else ""
        print(f"{tenant_id}: audit at {rep['at']} in {rep['duration_s']} s{flag}")
        for m in rep["metrics"]:
            print(_status_line(m))
        for a in rep.get("actions", []):
            print(f"  action {a['action']}: {a['decision']} ({a['governed_by']}={a['mode']})")
        for reason in rep.get("critical_reasons", []):
            print(f"  critical: {reason}")
        for s in rep.get("strategies", []):
            print(f"  strategy for {s['indicator']}: {s['advice']}")
    return 0


def _purge_plan(args: argparse.Namespace) -> int:
    result = run_op(req.PurgePlanRequest(args.tenant, args.retention_days), settings_of(args))
    if args.json:
        print_json(result)
        return 0
    print(
        f"{result['count']} memories would leave the live index of {args.tenant} "
        f"({result['kept_within_retention']} kept inside the {result['retention_days']:g}-day "
        "retention)"
    )
    for item in result["items"]:
        repl = item["replacement_id"] or "no replacement"
        print(f"  {item['id']}  {item['reason']:<16} → {repl}  {item['text'][:60]}")
    return 0


def _purge_apply(args: argparse.Namespace) -> int:
    result = run_op(
        req.PurgeApplyRequest(args.tenant, bool(args.yes), args.retention_days, args.id or None),
        settings_of(args),
    )
    if args.json:
        print_json(result)
        return 0
    print(f"removed {result['removed_count']}, skipped {result['skipped_count']}")
    for s in result["skipped"]:
        sessions = f" ({', '.join(s['sessions'])})" if s.get("sessions") else ""
        print(f"  skipped {s['id']}: {s['why']}{sessions}")
    return 0


def _purge_restore(args: argparse.Namespace) -> int:
    result = run_op(req.PurgeRestoreRequest(args.tenant, args.id or None), settings_of(args))
    if args.json:
        print_json(result)
        return 0
    print(f"restored {result['count']} memories")
    return 0


def _rem_run(args: argparse.Namespace) -> int:
    result = run_op(req.RemRunRequest(args.tenant or None, all=bool(args.all)), settings_of(args))
    if args.json:
        print_json(result)
        return 0
    for tenant_id, s in result["tenants"].items():
        before = sum(v["current"] for v in s["before"].values())
        after = sum(v["current"] for v in s["after"].values())
        resumed = f" (finished interrupted run {s['resumed']})" if s.get("resumed") else ""
        print(f"{tenant_id}: current memories {before} → {after}{resumed}")
        for step, info in s["steps"].items():
            print(
                f"  {step:<9} retired {len(info['retired'])}, added {len(info['added'])}, "
                f"reviews {info['reviews']}"
            )
    return 0
