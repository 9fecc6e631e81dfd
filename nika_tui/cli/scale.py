"""``nika scale status|plan|apply|decommission|reconcile|workers`` (strategy B, issue 18)."""

from __future__ import annotations

import argparse
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from nika_tui.cli.common import add_json_flag, print_json, settings_of

if TYPE_CHECKING:
    from nika_tui.settings import Settings


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``nika scale``."""
    parser = sub.add_parser("scale", help="strategy B: workers on the tenant's cloud providers")
    parser.add_argument(
        "action",
        choices=["status", "plan", "apply", "decommission", "reconcile", "workers", "move"],
    )
    parser.add_argument("id", nargs="?", help="plan id (apply) or instance id (decommission)")
    parser.add_argument("--tenant", help="tenant id (all tenants for status / reconcile)")
    parser.add_argument(
        "--remove", action="store_true", help="reconcile: delete untracked nika instances"
    )
    parser.add_argument("--to", help="move: the worker id the tenant moves to")
    add_json_flag(parser)
    parser.set_defaults(handler=_scale)


def _samples(settings: Settings) -> list[Any]:
    from nika_tui.errors import StoreUnavailable
    from nika_tui.scale.sampler import load_samples
    from nika_tui.services.redis_server import connect

    try:
        return load_samples(connect(settings, start=False))
    except StoreUnavailable:
        return []


def _redis_or_none(settings: Settings) -> Any:
    """The service's Redis, where the plans are; ``None`` (the local file) when it is down."""
    from nika_tui.errors import StoreUnavailable
    from nika_tui.services.redis_server import connect

    try:
        return connect(settings, start=False)
    except StoreUnavailable:
        return None


def _need_tenant(args: argparse.Namespace) -> str:
    from nika_tui.errors import ValidationFailed

    if not args.tenant:
        raise ValidationFailed(f"`nika scale {args.action}` needs --tenant", "add --tenant T")
    return str(args.tenant)


def _scale(args: argparse.Namespace) -> int:
    if args.action == "workers":
        from nika_tui.scale.workers import print_workers, workers_status
        from nika_tui.services.redis_server import connect

        print_workers(workers_status(connect(settings_of(args), start=False)), bool(args.json))
        return 0
    if args.action == "move":
        from nika_tui.errors import ValidationFailed
        from nika_tui.scale.workers import request_move
        from nika_tui.services.redis_server import connect

        if not args.to:
            raise ValidationFailed(
                "`nika scale move` needs --to WORKER", "see `nika scale workers`"
            )
        print_json(
            request_move(connect(settings_of(args), start=False), _need_tenant(args), str(args.to))
        )
        return 0
    return _scale_plans(args)


def _scale_plans(args: argparse.Namespace) -> int:
    from nika_tui.domain.strategies import available_strategies
    from nika_tui.errors import ValidationFailed
    from nika_tui.scale.actions import apply_plan, default_factory, reconcile
    from nika_tui.scale.indicators import Thresholds, calm, evaluate
    from nika_tui.scale.leader import leader_of
    from nika_tui.scale.planner import Plan, PlanKind, make_plan
    from nika_tui.scale.state import ScaleState
    from nika_tui.services.config_store import list_tenant_ids, load_tenant

    settings = settings_of(args)
    where = settings.roots
    now = datetime.now(UTC)
    state = ScaleState(where, _redis_or_none(settings))
    factory = default_factory()
    out: dict[str, Any]
    if args.action == "status":
        tenants = [args.tenant] if args.tenant else list_tenant_ids(where)
        samples = _samples(settings)
        readings = [r.as_dict() for r in evaluate(samples, now)]
        snap = state.snapshot()
        out = {
            "leader": leader_of(state.client) if state.client is not None else None,
            "samples": len(samples),
            "indicators": readings,
            "tenants": {
                t: {
                    "strategies": [s.value for s in available_strategies(load_tenant(t, where))],
                    "auto_scale": load_tenant(t, where).auto_actions.scale.value,
                    "workers": [w.as_dict() for w in state.workers(t)],
                    "plans": [p for p in snap["plans"].values() if p["tenant_id"] == t],
                }
                for t in tenants
            },
        }
    elif args.action == "plan":
        config = load_tenant(_need_tenant(args), where)
        samples = _samples(settings)
        t = Thresholds(
            queue_depth=config.scale.queue_threshold, calm_s=60.0 * config.scale.calm_minutes
        )
        plan = make_plan(
            config,
            evaluate(samples, now, t),
            calm(samples, now, t),
            state.workers(config.tenant_id),
            now,
            uuid.uuid4().hex,
        )
        other = None
        if plan.kind in (PlanKind.SCALE_OUT, PlanKind.DECOMMISSION):
            other = state.save_plan_unless_open(plan, "pending")
        if other is not None:  # one open plan per tenant: show it rather than add a second
            plan = Plan.from_dict(other)
        out = {**plan.as_dict(), "summary": plan.summary(), "samples": len(samples)}
        if other is not None:
            out.update(status=other["status"], already_open=True)
    elif args.action == "apply":
        config = load_tenant(_need_tenant(args), where)
        if not args.id:
            raise ValidationFailed(
                "`nika scale apply` needs a plan id", "make one with `nika scale plan --tenant T`"
            )
        out = apply_plan(args.id, config, state, factory, now, settings)
    elif args.action == "decommission":
        config = load_tenant(_need_tenant(args), where)
        workers = state.workers(config.tenant_id)
        chosen = [w for w in workers if args.id in (None, w.instance_id)]
        if not chosen:
            raise ValidationFailed(
                f"tenant {config.tenant_id} has no worker {args.id or ''}".strip(),
                "list workers with `nika scale status --tenant T`",
            )
        worker = max(chosen, key=lambda w: w.created_at)
        plan = Plan(
            uuid.uuid4().hex,
            config.tenant_id,
            PlanKind.DECOMMISSION,
            now.isoformat(),
            ("asked by a person",),
            worker.provider,
            instance_id=worker.instance_id,
            cost_per_hour_eur=worker.cost_per_hour_eur,
        )
        state.save_plan(plan, "pending")
        out = apply_plan(plan.plan_id, config, state, factory, now, settings)
    else:
        ids = [args.tenant] if args.tenant else list_tenant_ids(where)
        report = reconcile([load_tenant(t, where) for t in ids], state, factory, remove=args.remove)
        out = report.as_dict()
    if args.json:
        print_json(out)
    else:
        _print(args.action, out)
    return 0


def _print(action: str, out: dict[str, Any]) -> None:
    if action == "status":
        print(f"{out['samples']} samples")
        for r in out["indicators"]:
            flag = "SATURATED" if r["saturated"] else "ok"
            print(f"  {r['indicator']:9} {r['value']!s:>10} / {r['threshold']:<8} {flag}")
        for tenant, info in out["tenants"].items():
            print(f"{tenant}: {len(info['workers'])} worker(s), strategies {info['strategies']}")
    elif action == "plan":
        print(f"{out['plan_id']}  {out['kind']}: {out['summary']}")
        if out.get("already_open"):
            print(f"  (already {out['status']}: apply or reject it before a new plan is made)")
    elif action == "reconcile":
        for key in ("tracked", "adopted", "orphans", "removed", "missing", "failed"):
            print(f"{key}: {len(out[key])}")
        for err in out["errors"]:
            print(f"error: {err}")
    else:
        print(f"{out['plan_id']}  {out['status']}  {out.get('instance_id') or ''}")
