"""Executors of the debt audit's actions: what ``autonomous`` runs and a confirmation applies.

Each executor is small and acts through the module that owns the thing it changes:

- ``dedup`` / ``retag``: the REM ``merge`` / ``rejudge`` steps over every current memory;
- ``boost_recency`` / ``tighten_scope``: the tenant's ``recall_tuning`` hash, read by
  :mod:`nika_tui.engine.recall` (recency re-ranking, inferred project filter);
- ``trim_working_memory``: the kernel's compact command
  (:func:`nika_tui.engine.kernels.compaction.send_compact`) when the kernel is live and idle;
- ``audit_judge_prompt``: the tenant's configured judge re-run on its own recently judged pairs
  and compared with the rules judge and the recorded verdicts (report on the bus + Redis);
- ``rotate_logs``: the bus files of past days gzip-archived (:meth:`Bus.archive_before`);
- ``diagnose_spawn``: pod_ttfl samples, tmux, the agent command on PATH, the last kernel error
  (report on the bus + Redis).

Every executor returns a JSON-ready dict with ``done`` (whether it changed or produced
something) and logs one ``debt.audit`` line ``{"action", "result"}`` on the tenant's bus.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable
from typing import Any

from nika_tui.domain import debt_tables
from nika_tui.domain import protocol_replies as rep
from nika_tui.domain import protocol_requests as req
from nika_tui.domain.debt_results import changed_nothing, describe_result
from nika_tui.domain.debt_tables import ActionKind
from nika_tui.domain.judge_rules import RulesJudge
from nika_tui.domain.kernel_state import KernelState
from nika_tui.domain.sampling import percentile_estimate
from nika_tui.domain.verdicts import Fact, Verdict
from nika_tui.engine.audit.inventory import inventory
from nika_tui.engine.context import EngineContext
from nika_tui.engine.debt.pause import memory_fingerprint, settle_after_noop
from nika_tui.engine.judge_pairs import recent_judged_pairs
from nika_tui.engine.recall import RECENCY_TAU_DAYS, RECENCY_WEIGHT, write_tuning
from nika_tui.errors import JudgeError, NikaError, ValidationFailed
from nika_tui.services import kernel_store, redis_keys

JUDGE_AUDIT_PAIRS = 50
"""Recently judged pairs the judge audit re-runs the configured judge on."""
EXAMPLES_KEPT = 10


def _rem(ctx: EngineContext, tenant_id: str, step: str) -> dict[str, Any]:
    from nika_tui.engine.rem.run import run_rem

    # The audit measured every current point, so the action covers all of them too.
    result = run_rem(ctx, tenant_id, steps=(step,), window=None, trigger="audit")
    return {"done": True, "rem": result.summary()}


def boost_recency(ctx: EngineContext, tenant_id: str) -> dict[str, Any]:
    """Turn the recency boost of recall on (``recency_weight``, ``recency_tau_days``)."""
    tuning = write_tuning(
        ctx.redis,
        tenant_id,
        ctx.clock(),
        recency_weight=str(RECENCY_WEIGHT),
        recency_tau_days=str(RECENCY_TAU_DAYS),
    )
    return {
        "done": True,
        "recall_tuning": {
            "recency_weight": tuning.recency_weight,
            "recency_tau_days": tuning.recency_tau_days,
        },
    }


def tighten_scope(ctx: EngineContext, tenant_id: str) -> dict[str, Any]:
    """Make recall restrict unscoped queries to an inferred project (``tighten_scope``)."""
    tuning = write_tuning(ctx.redis, tenant_id, ctx.clock(), tighten_scope="1")
    return {"done": True, "recall_tuning": {"tighten_scope": tuning.tighten_scope}}


def trim_working_memory(ctx: EngineContext, tenant_id: str) -> dict[str, Any]:
    """Type the kernel's compact command when the kernel is live and idle, else report why not."""
    from nika_tui.engine.kernels.manager import KernelManager

    manager = KernelManager(
        ctx.settings, child_env=ctx.child_env, redis_client=ctx.redis, clock=ctx.clock
    )
    try:
        if not manager.is_running(tenant_id):
            return {"done": False, "reason": "the kernel is not running: nothing to trim"}
        status = manager.poll(tenant_id)
        state = status.state if status is not None else KernelState.EXITED
        if state is not KernelState.IDLE:
            # Same rule as the compaction policy: never type into a busy or asking agent.
            return {"done": False, "reason": f"the kernel is {state.value}: not compacted now"}
        command = manager.send_compact(tenant_id, trigger="nika-debt")
    except NikaError as exc:  # tmux unreachable, no compact command, kernel gone meanwhile
        return {"done": False, "reason": exc.message}
    return {"done": True, "command": command}


def audit_judge_prompt(ctx: EngineContext, tenant_id: str) -> dict[str, Any]:
    """Re-run the tenant's configured judge on its recent judged pairs; compare with the rules.

    The configured judge is :meth:`EngineContext.judge_for` (it obeys the privacy mode). The
    report (``agreement_with_rules``, ``agreement_with_recorded``, verdict counts, up to 10
    disagreements) goes to ``judge_audit(t)`` in Redis and on the bus.
    """
    inv = inventory(ctx.vectors, tenant_id, ctx.clock(), 0, random.Random(0))
    pairs = recent_judged_pairs(ctx, tenant_id, inv.retired_payloads(), JUDGE_AUDIT_PAIRS)
    judge = ctx.judge_for(tenant_id)
    # The action audits the configured judge's prompt: behind a cascade, that is the LLM tier.
    judge = getattr(judge, "llm", judge)
    rules = RulesJudge()
    same_rules = same_recorded = 0
    counts: Counter[str] = Counter()
    examples: list[dict[str, str]] = []
    for pair in pairs:
        old = Fact(pair.old_text, pair.old_valid_from)
        new = Fact(pair.new_text, pair.new_valid_from)
        try:
            verdict = judge.judge(old, new).verdict
        except JudgeError:
            verdict = Verdict.UNCERTAIN
        baseline = rules.judge(old, new).verdict
        counts[verdict.value] += 1
        same_rules += verdict is baseline
        same_recorded += verdict is pair.verdict
        if verdict is not baseline and len(examples) < EXAMPLES_KEPT:
            examples.append(
                {
                    "old_id": pair.old_id,
                    "new_id": pair.new_id,
                    "judge": verdict.value,
                    "rules": baseline.value,
                    "recorded": pair.verdict.value,
                }
            )
    n = len(pairs)
    report: dict[str, Any] = {
        "at": ctx.clock().isoformat(),
        "judge": judge.name,
        "baseline": rules.name,
        "pairs": n,
        "agreement_with_rules": round(same_rules / n, 4) if n else None,
        "agreement_with_recorded": round(same_recorded / n, 4) if n else None,
        "verdicts": dict(counts),
        "disagreements": examples,
    }
    ctx.redis.set(redis_keys.judge_audit(tenant_id), json.dumps(report))
    return {"done": n > 0, "report": report}


def rotate_logs(ctx: EngineContext, tenant_id: str) -> dict[str, Any]:
    """Archive the bus files of the days before today (gzip, verified, then removed)."""
    archived = ctx.bus(tenant_id).archive_before(ctx.clock().date())
    return {"done": bool(archived), "archived": archived}


def diagnose_spawn(ctx: EngineContext, tenant_id: str) -> dict[str, Any]:
    """Collect what explains slow or failing spawns into a report (bus + Redis)."""
    from nika_tui.services.kernel_launch import command_for

    samples = kernel_store.pod_ttfl_samples(ctx.redis, tenant_id)[:100]
    ttfl: dict[str, Any] = {"samples": len(samples)}
    if samples:
        ttfl.update(
            p50=percentile_estimate(samples, 50.0).value,
            p95=percentile_estimate(samples, 95.0).value,
            max=max(samples),
            last=samples[0],
        )
    socket = ctx.settings.tmux_socket
    tmux_bin = shutil.which("tmux", path=ctx.child_env.get("PATH"))
    server = "tmux not installed"
    if tmux_bin is not None:
        try:
            done = subprocess.run(
                [tmux_bin, "-L", socket, "list-sessions"],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
            server = "running" if done.returncode == 0 else "no server on the socket"
        except (OSError, subprocess.TimeoutExpired) as exc:
            server = f"unreachable: {exc}"
    config = ctx.tenant(tenant_id)
    try:
        argv = command_for(config, ctx.child_env)
        cli: dict[str, Any] = {"command": argv[0], "found": True}
    except NikaError as exc:
        cli = {"found": False, "error": exc.message, "hint": exc.hint}
    fields = kernel_store.read_fields(ctx.redis, tenant_id)
    report: dict[str, Any] = {
        "at": ctx.clock().isoformat(),
        "pod_ttfl_s": ttfl,
        "tmux": {"binary": tmux_bin, "socket": socket, "server": server},
        "agent_cli": {"cli": config.agent_cli.value, **cli},
        "kernel": {
            "state": fields.get("state", ""),
            "last_error": fields.get("reason", "") if fields.get("state") == "error" else "",
            "last_reason": fields.get("reason", ""),
            "last_event_at": fields.get("last_event_at", ""),
        },
    }
    ctx.redis.set(redis_keys.spawn_diagnosis(tenant_id), json.dumps(report))
    return {"done": True, "report": report}


EXECUTORS: dict[ActionKind, Callable[[EngineContext, str], dict[str, Any]]] = {
    ActionKind.DEDUP: lambda ctx, t: _rem(ctx, t, "merge"),
    ActionKind.RETAG: lambda ctx, t: _rem(ctx, t, "rejudge"),
    ActionKind.BOOST_RECENCY: boost_recency,
    ActionKind.TIGHTEN_SCOPE: tighten_scope,
    ActionKind.TRIM_WORKING_MEMORY: trim_working_memory,
    ActionKind.AUDIT_JUDGE_PROMPT: audit_judge_prompt,
    ActionKind.ROTATE_LOGS: rotate_logs,
    ActionKind.DIAGNOSE_SPAWN: diagnose_spawn,
}


def apply_action(ctx: EngineContext, tenant_id: str, kind: ActionKind | str) -> dict[str, Any]:
    """Run one action's executor and log its result on the bus (``debt.audit``).

    Called by the audit for ``autonomous`` actions, and by whoever approves a
    ``debt.{action}`` confirmation (RPC ``debt.apply``).

    Args:
        ctx: Engine context.
        tenant_id: The tenant.
        kind: The action.

    Returns:
        The executor's result (``done`` plus what it did or why not).
    """
    action = ActionKind(kind)
    result = EXECUTORS[action](ctx, tenant_id)
    ctx.bus(tenant_id).append(
        "debt.audit",
        {"action": action.value, "text": debt_tables.ACTIONS[action].text, "result": result},
        now=ctx.clock(),
    )
    return result


def apply_confirmation(ctx: EngineContext, tenant_id: str, confirmation_id: str) -> dict[str, Any]:
    """Apply a pending ``debt.{action}`` confirmation (a person approved it).

    The confirmation is marked ``approved`` (with ``resolved_at``) and ``confirmation.resolved``
    goes on the bus, then the action runs. When it changed nothing, it is held (not proposed
    again until the memories change) and the debt pause is decided again without it; the
    ``summary`` says both.

    Raises:
        ValidationFailed: No pending debt confirmation has that id.
    """
    key = redis_keys.confirmations(tenant_id)
    raw = ctx.redis.hget(key, confirmation_id)
    item = json.loads(str(raw)) if raw else None
    kind = str(item.get("kind", "")) if isinstance(item, dict) else ""
    if (
        not isinstance(item, dict)
        or not kind.startswith("debt.")
        or item.get("status") != "pending"
    ):
        raise ValidationFailed(
            f"no pending debt confirmation {confirmation_id!r} for tenant {tenant_id}",
            "list them in the dashboard or in the confirmations hash",
        )
    now = ctx.clock()
    item.update(status="approved", resolved_at=now.isoformat())
    ctx.redis.hset(key, confirmation_id, json.dumps(item))
    ctx.bus(tenant_id).append(
        "confirmation.resolved",
        {"id": confirmation_id, "kind": kind, "status": "approved"},
        now=now,
    )
    action = kind.removeprefix("debt.")
    result = apply_action(ctx, tenant_id, action)
    summary = describe_result(action, result)
    if changed_nothing(action, result):
        # Approved and useless: the next audits must not ask the same until the data moves,
        # nor keep bulk ingestion paused waiting for it (decision 446).
        ctx.redis.set(redis_keys.debt_noop(tenant_id, action), memory_fingerprint(ctx, tenant_id))
        ingest = settle_after_noop(ctx, tenant_id)
        if ingest:
            result["ingest"] = ingest
            summary = f"{summary}; {ingest}"
    result["summary"] = summary
    return result


def debt_apply_op(ctx: EngineContext, r: req.DebtApplyRequest) -> rep.DebtApplyReply:
    if r.confirmation_id:
        return rep.DebtApplyReply(apply_confirmation(ctx, r.tenant_id, r.confirmation_id))
    try:
        kind = ActionKind(r.action or "")
    except ValueError as exc:
        raise ValidationFailed(
            f"unknown debt action {r.action!r}",
            f"one of: {', '.join(k.value for k in ActionKind)}",
        ) from exc
    return rep.DebtApplyReply(apply_action(ctx, r.tenant_id, kind))
