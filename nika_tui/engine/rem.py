"""The REM pass: consolidate a tenant's memory while its agents sleep (seed 2, « Pourquoi dormir »).

Steps, in this order (each plans first, journals its plan, then applies it op by op):

1. ``obsolete`` — retire current memories whose job or task the YAML hierarchy marks
   ``obsolete`` or ``cancelled`` (the golden rule: status comes from the hierarchy).
2. ``promote`` — an episodic fact repeated in two or more sessions (episodic memories of one
   project at cosine > 0.92 with distinct ``session_id``) becomes one semantic memory (the
   best-sourced text, entities/files/tools merged); the episodic copies are retired, superseded
   by it. Promotion runs before merging so the repetition is seen before anything is merged.
3. ``merge`` — near-duplicates (same layer and project, cosine > 0.92, and no contradiction
   between them by the rules parser) are merged: the best-sourced one is kept — the most
   entity/files/tools metadata, then the newest valid time, then the smallest id — and the
   others are retired, superseded by it.
4. ``rejudge`` — pairs of current memories above the supersede candidate threshold (cosine
   ≥ 0.50, same layer and project) that were never judged (not in the review queue, not
   re-judged by an earlier pass) go to the tenant's judge (``judge_for``: its privacy mode):
   REPLACE retires the older, UNCERTAIN queues a review, KEEP changes nothing.

The pass never deletes (it only retires and adds), is idempotent (a second run finds nothing
to do), and journals every step in ``{data}/tenants/{t}/rem/journal.jsonl`` (0600, fsync'd):
``start`` → per step ``plan`` (every op) → ``op`` (each op done) → ``step`` → ``end``. A pass
killed mid-way is *resumed* by the next run: the unfinished step's remaining ops are applied
(every op is idempotent), the old run is closed, and a fresh pass follows.

Base set: memories asserted in the last ``window`` (the day's sessions, default 24 h);
neighbours can be any current memory. ``window=None`` takes every current memory.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from nika_tui.domain.debt import DEDUP_COSINE
from nika_tui.domain.envelope import NikaMeta, Trigger
from nika_tui.domain.fact_parse import parse_fact
from nika_tui.domain.hierarchy import NodeStatus
from nika_tui.domain.judge_rules import Conflict, compare
from nika_tui.domain.memory import Layer, MemoryRecord, Status, content_hash, memory_id
from nika_tui.domain.ports import PointFilter, VectorPoint
from nika_tui.domain.verdicts import Fact, Judgement, Verdict
from nika_tui.engine.context import EngineContext
from nika_tui.engine.retire import retire
from nika_tui.engine.review import enqueue, review_id
from nika_tui.engine.supersede import SUPERSEDE_MIN_COSINE
from nika_tui.errors import JudgeError, ValidationFailed
from nika_tui.paths import FILE_MODE, ensure_private_dir, tenant_data_dir
from nika_tui.services import redis_keys

STEPS: tuple[str, ...] = ("obsolete", "promote", "merge", "rejudge")
DEFAULT_WINDOW = timedelta(days=1)
NEIGHBOURS = 8
"""Nearest current memories examined per base memory."""
OBSOLETE_STATUSES = (NodeStatus.OBSOLETE.value, NodeStatus.CANCELLED.value)
JOURNAL_ROTATE_BYTES = 4 * 1024 * 1024
MAX_ROUNDS = 5
PROGRESS_EVERY = 50
"""Ops applied between two fsync'd progress lines (a resume replays at most this many)."""
REPEATED = ("merge", "rejudge")
"""Steps re-planned until they find nothing new: retiring a memory can bring a farther
neighbour into another memory's top-k, and a pass must end at a fixed point (idempotence)."""

OpHook = Callable[[str, int, dict[str, Any]], None]
"""Called after each applied op with (step, index, op): progress reports, crash tests."""


def journal_path(tenant_id: str, env: Mapping[str, str] | None = None) -> Path:
    """``{data}/tenants/{t}/rem/journal.jsonl``."""
    return tenant_data_dir(tenant_id, env) / "rem" / "journal.jsonl"


class Journal:
    """Append-only, fsync'd JSON lines of one tenant's REM passes."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, entry: Mapping[str, Any]) -> None:
        """Write one line durably."""
        ensure_private_dir(self.path.parent)
        line = (json.dumps(entry, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def entries(self) -> Iterator[dict[str, Any]]:
        """Every readable line (a torn last line from a crash is skipped)."""
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8", errors="replace") as fh:
            for raw in fh:
                try:
                    data = json.loads(raw)
                except json.JSONDecodeError:
                    continue
                if isinstance(data, dict):
                    yield data

    def last_run(self) -> list[dict[str, Any]]:
        """Lines of the most recent run (from its ``start``)."""
        run: list[dict[str, Any]] = []
        for e in self.entries():
            if e.get("event") == "start":
                run = [e]
            elif run and e.get("run") == run[0].get("run"):
                run.append(e)
        return run

    def rotate_if_large(self) -> None:
        """Keep one previous file when the journal grows past a few MB (between runs only)."""
        if self.path.exists() and self.path.stat().st_size > JOURNAL_ROTATE_BYTES:
            os.replace(self.path, self.path.with_suffix(".1.jsonl"))


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


def _record(payload: Mapping[str, Any]) -> MemoryRecord:
    return MemoryRecord.from_payload(dict(payload))


def sourcing(record: MemoryRecord) -> tuple[int, float]:
    """How well sourced a record is: (entity + files + tools metadata, valid time); max wins."""
    meta = record.meta
    return (len(meta.entity_ids) + len(meta.files) + len(meta.tools), record.valid_from.timestamp())


def best_sourced(records: Sequence[MemoryRecord]) -> MemoryRecord:
    """The record to keep among duplicates: best :func:`sourcing`, then the smallest id."""
    top = max(sourcing(r) for r in records)
    return min((r for r in records if sourcing(r) == top), key=lambda r: r.id)


def _conflict_free(a: MemoryRecord, b: MemoryRecord) -> bool:
    """True when two near-identical texts say the same thing (no value changed between them)."""
    cmp = compare(parse_fact(a.text), parse_fact(b.text))
    return cmp.conflict is Conflict.NONE and not cmp.changed


class _Planner:
    """Computes each step's ops from the current state of the stores."""

    def __init__(self, ctx: EngineContext, tenant_id: str, window: timedelta | None) -> None:
        self.ctx = ctx
        self.tenant_id = tenant_id
        self.now = ctx.clock()
        self.since = None if window is None else (self.now - window).timestamp()
        self.current_only = PointFilter(equals={"status": Status.CURRENT.value})

    def base(self, layer: Layer) -> list[tuple[MemoryRecord, list[float]]]:
        """Current memories of ``layer`` asserted in the window, with their vectors."""
        out: list[tuple[MemoryRecord, list[float]]] = []
        for p in self.ctx.vectors.scroll(
            self.tenant_id, layer, self.current_only, batch=512, with_vectors=True
        ):
            rec = _record(p.payload)
            if self.since is not None and rec.asserted_at.timestamp() < self.since:
                continue
            if p.vector is not None:
                out.append((rec, list(p.vector)))
        return out

    def neighbours(
        self, rec: MemoryRecord, vector: Sequence[float], layer: Layer, floor: float
    ) -> list[tuple[MemoryRecord, float]]:
        """Current memories of the same layer and project at cosine ≥ ``floor``."""
        flt = PointFilter(
            equals={"status": Status.CURRENT.value, "project_id": rec.meta.project_id}
        )
        hits = self.ctx.vectors.search_dense(
            self.tenant_id, layer, vector, flt=flt, limit=NEIGHBOURS + 1
        )
        return [(_record(h.payload), h.score) for h in hits if h.id != rec.id and h.score >= floor]

    def clusters(self, layer: Layer) -> list[list[MemoryRecord]]:
        """Connected groups of near-duplicates (cosine > 0.92, no contradiction)."""
        parent: dict[str, str] = {}
        records: dict[str, MemoryRecord] = {}

        def find(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for rec, vec in self.base(layer):
            records[rec.id] = rec
            parent.setdefault(rec.id, rec.id)
            for other, score in self.neighbours(rec, vec, layer, DEDUP_COSINE):
                if score <= DEDUP_COSINE or not _conflict_free(rec, other):
                    continue
                records[other.id] = other
                parent.setdefault(other.id, other.id)
                ra, rb = find(rec.id), find(other.id)
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
        groups: dict[str, list[MemoryRecord]] = {}
        for mid in parent:
            groups.setdefault(find(mid), []).append(records[mid])
        return [sorted(g, key=lambda r: r.id) for g in groups.values() if len(g) > 1]

    def obsolete(self) -> list[dict[str, Any]]:
        nodes = self.ctx.hierarchy_nodes(self.tenant_id)
        dead = {n.id: n.status.value for n in nodes if n.status.value in OBSOLETE_STATUSES}
        if not dead:
            return []
        ops: list[dict[str, Any]] = []
        seen: set[str] = set()
        for layer in Layer:
            for key in ("job_id", "task_id"):
                flt = PointFilter(
                    equals={"status": Status.CURRENT.value}, any_of={key: sorted(dead)}
                )
                for p in self.ctx.vectors.scroll(self.tenant_id, layer, flt, batch=512):
                    if p.id in seen:
                        continue
                    seen.add(p.id)
                    node = str(p.payload.get(key))
                    ops.append(
                        {
                            "op": "retire",
                            "layer": layer.value,
                            "id": p.id,
                            "superseded_by": None,
                            "reason": f"rem: the hierarchy marks {node} {dead[node]}",
                        }
                    )
        return ops

    def promote(self) -> list[dict[str, Any]]:
        ops: list[dict[str, Any]] = []
        for group in self.clusters(Layer.EPISODIC):
            sessions = {r.meta.session_id for r in group if r.meta.session_id}
            if len(sessions) < 2:
                continue
            keep = best_sourced(group)
            members = sorted(r.id for r in group)
            new_id = memory_id(self.tenant_id, "rem-promote:" + ",".join(members))
            meta = keep.meta.model_copy(
                update={
                    "session_id": "",
                    "trigger": Trigger.SYSTEM,
                    "entity_ids": tuple(sorted({e for r in group for e in r.meta.entity_ids})),
                    "files": tuple(sorted({f for r in group for f in r.meta.files})),
                    "tools": tuple(sorted({t for r in group for t in r.meta.tools})),
                }
            )
            semantic = MemoryRecord(
                id=new_id,
                tenant_id=self.tenant_id,
                layer=Layer.SEMANTIC,
                text=keep.text,
                meta=NikaMeta.model_validate(meta.model_dump()),
                valid_from=max(r.valid_from for r in group),
                asserted_at=self.now,
                content_hash=content_hash(
                    self.tenant_id, Layer.SEMANTIC, keep.text, keep.meta.project_id
                ),
            )
            ops.append(
                {
                    "op": "add",
                    "layer": Layer.SEMANTIC.value,
                    "vector_from": [Layer.EPISODIC.value, keep.id],
                    "payload": semantic.to_payload(),
                }
            )
            reason = f"rem: promoted to semantic {new_id} (seen in {len(sessions)} sessions)"
            ops += [
                {
                    "op": "retire",
                    "layer": Layer.EPISODIC.value,
                    "id": mid,
                    "superseded_by": new_id,
                    "reason": reason,
                }
                for mid in members
            ]
        return ops

    def merge(self) -> list[dict[str, Any]]:
        ops: list[dict[str, Any]] = []
        for layer in Layer:
            for group in self.clusters(layer):
                keep = best_sourced(group)
                for r in group:
                    if r.id != keep.id:
                        ops.append(
                            {
                                "op": "retire",
                                "layer": layer.value,
                                "id": r.id,
                                "superseded_by": keep.id,
                                "reason": f"rem: merged duplicate of {keep.id}",
                            }
                        )
        return ops

    def rejudge(self) -> list[dict[str, Any]]:
        judged = self.ctx.redis.smembers(redis_keys.rem_judged(self.tenant_id))
        judge = self.ctx.judge_for(self.tenant_id)
        retired: set[str] = set()
        ops: list[dict[str, Any]] = []
        pairs: dict[str, tuple[MemoryRecord, MemoryRecord, Layer]] = {}
        for layer in Layer:
            for rec, vec in self.base(layer):
                for other, _score in self.neighbours(rec, vec, layer, SUPERSEDE_MIN_COSINE):
                    old, new = sorted((rec, other), key=lambda r: (r.valid_from, r.id))
                    key = f"{old.id}>{new.id}"
                    if key in judged or key in pairs:
                        continue
                    if self.ctx.redis.hexists(
                        redis_keys.review_queue(self.tenant_id), review_id(old.id, new.id)
                    ):
                        continue
                    pairs[key] = (old, new, layer)
        judged_now: list[str] = []
        for key, (old, new, layer) in sorted(
            pairs.items(), key=lambda kv: (kv[1][1].valid_from, kv[1][0].valid_from, kv[0])
        ):
            if old.id in retired or new.id in retired:
                continue  # one side is retired by an earlier verdict of this pass
            judgement = _judge(judge, old, new)
            if judgement.verdict is Verdict.REPLACE:
                retired.add(old.id)
                ops.append(
                    {
                        "op": "retire",
                        "layer": layer.value,
                        "id": old.id,
                        "superseded_by": new.id,
                        "reason": f"rem rejudge — {judgement.judge}: {judgement.reason}"[:500],
                    }
                )
            elif judgement.verdict is Verdict.UNCERTAIN:
                ops.append(
                    {
                        "op": "review",
                        "layer": layer.value,
                        "old_id": old.id,
                        "new_id": new.id,
                        "reason": judgement.reason,
                        "judge": judgement.judge,
                    }
                )
            judged_now.append(key)
        if judged_now:
            ops.append({"op": "judged", "pairs": judged_now})
        return ops


def _judge(judge: Any, old: MemoryRecord, new: MemoryRecord) -> Judgement:
    try:
        j: Judgement = judge.judge(Fact(old.text, old.valid_from), Fact(new.text, new.valid_from))
    except JudgeError as exc:
        return Judgement(Verdict.UNCERTAIN, f"judge failed: {exc.message}", judge.name)
    if j.verdict is Verdict.REPLACE and new.valid_from < old.valid_from:
        return Judgement(Verdict.UNCERTAIN, f"REPLACE of a newer fact refused: {j.reason}", j.judge)
    return Judgement(j.verdict, j.reason, j.judge or judge.name)


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
            p.id: _record(p.payload)
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
    journal = Journal(journal_path(tenant_id, ctx.env))
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
    planner = _Planner(ctx, tenant_id, window)
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


def last_run_at(tenant_id: str, env: Mapping[str, str]) -> datetime | None:
    """When the tenant's last completed REM pass ended (None: never)."""
    last: datetime | None = None
    for e in Journal(journal_path(tenant_id, env)).entries():
        if e.get("event") == "end" and isinstance(e.get("at"), str):
            try:
                ts = datetime.fromisoformat(e["at"])
            except ValueError:
                continue
            last = ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts
    return last


DEFAULT_IDLE_S = 30 * 60
"""Kernels idle this long let the REM pass run (``NIKA_REM_IDLE_S``)."""
DEFAULT_REM_INTERVAL_S = 20 * 3600
"""At most one automatic pass per tenant in this time (``NIKA_REM_INTERVAL_S``)."""
_SLEEPING = ("idle", "exited", "error")


def _env_seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "")
    try:
        return float(raw) if raw else default
    except ValueError:
        return default


def kernels_idle(ctx: EngineContext, tenant_id: str, idle_s: float) -> bool:
    """True when every kernel of the tenant has been idle (or gone) for ``idle_s`` seconds.

    A tenant without any kernel record has nothing awake: it counts as idle.
    """
    from nika_tui.services.kernel_store import read_status

    now = ctx.clock()
    status = read_status(ctx.redis, tenant_id, now)
    if status is None:
        return True
    if status.state.value not in _SLEEPING:
        return False
    since = status.state_at or status.last_event_at
    return since is None or (now - since).total_seconds() >= idle_s


def rem_due(ctx: EngineContext, tenant_id: str) -> bool:
    """True when an automatic pass should run: kernels asleep and the last pass old enough."""
    env = ctx.env
    last = last_run_at(tenant_id, env)
    interval = _env_seconds(env, "NIKA_REM_INTERVAL_S", DEFAULT_REM_INTERVAL_S)
    if last is not None and (ctx.clock() - last).total_seconds() < interval:
        return False
    return kernels_idle(ctx, tenant_id, _env_seconds(env, "NIKA_REM_IDLE_S", DEFAULT_IDLE_S))


def _rem_tenants(ctx: EngineContext, body: Mapping[str, Any]) -> list[str]:
    from nika_tui.services.config_store import list_tenant_ids

    wanted = body.get("tenant_id")
    return [str(wanted)] if wanted else list_tenant_ids(ctx.env)


def rem_run_op(ctx: EngineContext, body: dict[str, Any]) -> dict[str, Any]:
    steps = body.get("steps") or list(STEPS)
    if not isinstance(steps, list) or any(s not in STEPS for s in steps):
        raise ValidationFailed("unknown REM step", "use any of: " + ", ".join(STEPS))
    window = None if body.get("all") else DEFAULT_WINDOW
    out = {
        t: run_rem(ctx, t, steps=steps, window=window, trigger="demand").summary()
        for t in _rem_tenants(ctx, body)
    }
    return {"tenants": out}
