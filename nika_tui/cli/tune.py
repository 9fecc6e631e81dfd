"""``nika tune recall`` and ``nika memory feedback`` (docs/tuning.md), both with ``--json``."""

from __future__ import annotations

import argparse
from typing import Any

from nika_tui.cli.common import add_json_flag, parse_seed, print_json, settings_of

TUNE_TIMEOUT_S = 600.0
"""A tuning embeds the labelled queries once, then runs in memory: minutes at most."""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``nika tune …``."""
    parser = sub.add_parser("tune", help="recall parameters, adopted only past 2x the noise")
    tsub = parser.add_subparsers(dest="tune_command", metavar="WHAT", required=True)
    rec = tsub.add_parser("recall", help="search recall's parameters on the tenant's labels")
    rec.add_argument("--tenant", required=True, help="tenant id")
    rec.add_argument("--trials", type=int, default=40, help="TPE trials (default 40)")
    rec.add_argument("--seed", default=None, help="sampler and bootstrap seed, 0 … 2^32-1")
    add_json_flag(rec)
    rec.set_defaults(handler=tune_cmd)


def register_feedback(msub: argparse._SubParsersAction[Any]) -> None:
    """Add ``nika memory feedback`` (called by ``cli/memory.py``)."""
    fb = msub.add_parser("feedback", help="mark recall results useful / not useful (for tuning)")
    fb.add_argument("--tenant", required=True, help="tenant id")
    fb.add_argument("--query", required=True, help="the query the results answered")
    fb.add_argument("--project", default="", help="the project the query was scoped to")
    fb.add_argument("--useful", nargs="*", default=[], metavar="ID", help="ids that helped")
    fb.add_argument("--not-useful", nargs="*", default=[], metavar="ID", help="ids that did not")
    fb.add_argument("--none", action="store_true", help="no memory answers this query")
    add_json_flag(fb)
    fb.set_defaults(handler=feedback_cmd)


def feedback_cmd(args: argparse.Namespace) -> int:
    """Append one mark to the tenant's relevance set (no service needed)."""
    from datetime import UTC, datetime

    from nika_tui.services.config_store import load_tenant
    from nika_tui.tuning.relevance import mark

    load_tenant(args.tenant, settings_of(args).roots)
    record = mark(
        args.tenant,
        args.query,
        datetime.now(UTC).isoformat(),
        useful=args.useful,
        not_useful=args.not_useful,
        expect_none=args.none,
        project_id=args.project,
        where=settings_of(args).roots,
    )
    if args.json:
        print_json(record)
    else:
        print(f"recorded for {args.query!r}")
    return 0


def tune_cmd(args: argparse.Namespace) -> int:
    """Run one tuning in the memory service (it owns the embedder and the store)."""
    from nika_tui.domain.protocol_requests import TuneRecallRequest
    from nika_tui.errors import ValidationFailed
    from nika_tui.services.config_store import load_tenant
    from nika_tui.services.memory_client import MemoryClient

    load_tenant(args.tenant, settings_of(args).roots)
    seed = parse_seed(args.seed) or 0
    if args.trials < 1:  # the service refuses it too; no need to ask
        raise ValidationFailed(
            f"--trials must be at least 1, got {args.trials}", "e.g. --trials 40"
        )
    request = TuneRecallRequest(args.tenant, args.trials, seed)
    result = MemoryClient.open(settings_of(args)).send(request, timeout=TUNE_TIMEOUT_S).report
    if args.json:
        print_json(result)
        return 0
    print(
        f"{result['n_queries']} labelled queries, {result['trials']} trials: "
        f"{result['baseline_metric']:.3f} → {result['best_metric']:.3f} "
        f"(gain {result['gain']:+.3f} ± {result['noise_sd']:.3f}); {result['action']}"
    )
    if result["action"] == "confirmation":
        print(
            f"approve with `nika confirm list --tenant {args.tenant}` then `nika confirm approve`"
        )
    return 0
