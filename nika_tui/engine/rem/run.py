"""One REM pass: plan each step, journal the plan, apply it op by op, resume a killed pass."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from nika_tui.domain.memory import Layer, Status
from nika_tui.domain.ports import PointFilter, VectorPoint
from nika_tui.domain.verdicts import Judgement, Verdict
from nika_tui.engine.context import EngineContext
from nika_tui.engine.rem.journal import Journal, journal_path
from nika_tui.engine.rem.plan import Planner, record_of
from nika_tui.engine.retire import retire
from nika_tui.engine.review import enqueue
from nika_tui.services import redis_keys

STEPS: tuple[str, ...] = ("obsolete", "promote", "merge", "rejudge")
DEFAULT_WINDOW = timedelta(days=1)


MAX_ROUNDS = 5
PROGRESS_EVERY = 50
"""Ops applied between two fsync'd progress lines (a resume replays at most this many)."""
REPEATED = ("merge", "rejudge")
"""Steps re-planned until they find nothing new: retiring a memory can bring a farther
neighbour into another memory's top-k, and a pass must end at a fixed point (idempotence)."""

OpHook = Callable[[str, int, dict[str, Any]], None]
"""Called after each applied op with (step, index, op): progress reports, crash tests."""


@dataclass
class RemResult:
    """What one pass did."""

    tenant_id: str
    run_id: str
    trigger: str
    before: dict[str, dict[str, int]]
    after: dict[str, dict[str, int]] = field(default_factory=dict)
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    resumed: str | None = None
    """Run id of an interrupted pass this run finished first."""

    def changed(self) -> int:
        """Number of ops applied (0 for a no-op pass)."""
        return sum(int(s.get("ops", 0)) for s in self.steps.values())

    def summary(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "tenant_id": self.tenant_id,
            "run_id": self.run_id,
            "trigger": self.trigger,
            "resumed": self.resumed,
            "before": self.before,
            "after": self.after,
            "steps": self.steps,
            "changed": self.changed(),
        }


def counts(ctx: EngineContext, tenant_id: str) -> dict[str, dict[str, int]]:
    """Current / retired counts per layer."""
    return {
        layer.value: {
            s.value: ctx.vectors.count(tenant_id, layer, PointFilter(equals={"status": s.value}))
            for s in Status
        }
        for layer in Layer
    }


def apply_op(ctx: EngineContext, tenant_id: str, op: Mapping[str, Any]) -> None:
    """Apply one journaled op; every op is idempotent (safe to replay after a crash)."""
    kind = op["op"]
    if kind == "retire":
        if ctx.vectors.retrieve(tenant_id, Layer(op["layer"]), [op["id"]]):
            retire(ctx, tenant_id, Layer(op["layer"]), op["id"], op["superseded_by"], op["reason"])
    elif kind == "add":
        payload = dict(op["payload"])
        layer = Layer(op["layer"])
        if ctx.vectors.retrieve(tenant_id, layer, [payload["id"]]):
            return
        src_layer, src_id = op["vector_from"]
        src = ctx.vectors.retrieve(tenant_id, Layer(src_layer), [src_id], with_vectors=True)
        if not src or src[0].vector is None:
            return  # the source vanished (purged): nothing to promote from
        ctx.vectors.upsert(
            tenant_id,
            layer,
            [VectorPoint(payload["id"], list(src[0].vector), payload["text"], payload)],
        )
        ctx.bus(tenant_id).append(
            "memory.ingested",
            {"memory_id": payload["id"], "layer": layer.value, "source": "rem.promote"},
            now=ctx.clock(),
        )
    elif kind == "review":
        layer = Layer(op["layer"])
        found = {
            p.id: record_of(p.payload)
            for p in ctx.vectors.retrieve(tenant_id, layer, [op["old_id"], op["new_id"]])
        }
        if op["old_id"] in found and op["new_id"] in found:
            enqueue(
                ctx,
                found[op["old_id"]],
                found[op["new_id"]],
                Judgement(Verdict.UNCERTAIN, str(op["reason"]), str(op["judge"])),
            )
    elif kind == "judged":
        pairs = list(op["pairs"])
        for start in range(0, len(pairs), 1000):
            ctx.redis.sadd(redis_keys.rem_judged(tenant_id), *pairs[start : start + 1000])


def _progress(journal: Journal, run_id: str, step: str, index: int, total: int) -> None:
    """Journal "ops up to ``index`` applied" every :data:`PROGRESS_EVERY` ops and at the end."""
    if index % PROGRESS_EVERY == 0 or index == total - 1:
        journal.append({"run": run_id, "event": "op", "step": step, "index": index})


def _resume(
    ctx: EngineContext, tenant_id: str, journal: Journal, hook: OpHook | None
) -> str | None:
    """Finish an interrupted pass (its journaled, not yet applied ops); return its run id."""
    run = journal.last_run()
    if not run or any(e.get("event") == "end" for e in run):
        return None
    run_id = str(run[0]["run"])
    plans = {e["step"]: e["ops"] for e in run if e.get("event") == "plan"}
    finished = {e["step"] for e in run if e.get("event") == "step"}
    done: dict[str, int] = {}
    for e in run:
        if e.get("event") == "op":
            done[str(e["step"])] = max(done.get(str(e["step"]), -1), int(e["index"]))
    for step, ops in plans.items():
        if step in finished:
            continue
        # Ops after the last journaled index may have been applied already: replaying them is
        # harmless (every op is idempotent).
        for i in range(done.get(step, -1) + 1, len(ops)):
            apply_op(ctx, tenant_id, ops[i])
            _progress(journal, run_id, step, i, len(ops))
            if hook is not None:
                hook(step, i, ops[i])
        journal.append({"run": run_id, "event": "step", "step": step, "ops": len(ops)})
    journal.append({"run": run_id, "event": "end", "resumed": True, "at": ctx.clock().isoformat()})
    return run_id


def run_rem(
    ctx: EngineContext,
    tenant_id: str,
    *,
    steps: Sequence[str] = STEPS,
    window: timedelta | None = DEFAULT_WINDOW,
    trigger: str = "demand",
    on_op: OpHook | None = None,
) -> RemResult:
    """Run (or resume, then run) one REM pass for a tenant.

    Args:
        ctx: Engine context (the service: the single writer).
        tenant_id: The tenant.
        steps: Subset of :data:`STEPS` to run (the audit's dedup action runs ``merge`` only).
        window: Base set = memories asserted this recently (None: all current memories).
        trigger: ``demand``, ``idle``, ``schedule`` or ``audit`` (recorded).
        on_op: Called after each applied op.

    Returns:
        What the pass did, with before/after counts.
    """
    ctx.tenant(tenant_id)
    journal = Journal(journal_path(tenant_id, ctx.settings.roots))
    resumed = _resume(ctx, tenant_id, journal, on_op)
    journal.rotate_if_large()
    run_id = uuid.uuid4().hex[:12]
    result = RemResult(tenant_id, run_id, trigger, counts(ctx, tenant_id), resumed=resumed)
    journal.append(
        {
            "run": run_id,
            "event": "start",
            "at": ctx.clock().isoformat(),
            "trigger": trigger,
            "steps": list(steps),
            "before": result.before,
        }
    )
    planner = Planner(ctx, tenant_id, window)
    for step in STEPS:
        if step not in steps:
            continue
        done_ops: list[dict[str, Any]] = []
        for rnd in range(MAX_ROUNDS if step in REPEATED else 1):
            ops: list[dict[str, Any]] = getattr(planner, step)()
            if not ops:
                break
            key = step if rnd == 0 else f"{step}#{rnd + 1}"
            journal.append({"run": run_id, "event": "plan", "step": key, "ops": ops})
            for i, op in enumerate(ops):
                apply_op(ctx, tenant_id, op)
                _progress(journal, run_id, key, i, len(ops))
                if on_op is not None:
                    on_op(step, i, op)
            journal.append({"run": run_id, "event": "step", "step": key, "ops": len(ops)})
            done_ops += ops
        result.steps[step] = {
            "ops": len([o for o in done_ops if o["op"] != "judged"]),
            "retired": sorted(o["id"] for o in done_ops if o["op"] == "retire"),
            "added": sorted(o["payload"]["id"] for o in done_ops if o["op"] == "add"),
            "reviews": len([o for o in done_ops if o["op"] == "review"]),
            "judged": sum(len(o["pairs"]) for o in done_ops if o["op"] == "judged"),
        }
    result.after = counts(ctx, tenant_id)
    journal.append(
        {"run": run_id, "event": "end", "at": ctx.clock().isoformat(), "after": result.after}
    )
    ctx.bus(tenant_id).append("rem.run", result.summary(), now=ctx.clock())
    return result
