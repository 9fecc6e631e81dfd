"""Planning the REM steps: each step's ops computed from the current state of the stores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from nika_tui.domain.debt_tables import DEDUP_COSINE
from nika_tui.domain.envelope import NikaMeta, Trigger
from nika_tui.domain.fact_parse import parse_fact
from nika_tui.domain.hierarchy import NodeStatus
from nika_tui.domain.judge_rules import Conflict, compare
from nika_tui.domain.memory import Layer, MemoryRecord, Status, content_hash, memory_id
from nika_tui.domain.ports import PointFilter
from nika_tui.domain.verdicts import Fact, Judgement, Verdict
from nika_tui.engine.context import EngineContext
from nika_tui.engine.review import review_id
from nika_tui.engine.supersede import SUPERSEDE_MIN_COSINE
from nika_tui.errors import JudgeError
from nika_tui.services import redis_keys

NEIGHBOURS = 8
"""Nearest current memories examined per base memory."""
OBSOLETE_STATUSES = (NodeStatus.OBSOLETE.value, NodeStatus.CANCELLED.value)


def record_of(payload: Mapping[str, Any]) -> MemoryRecord:
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


class Planner:
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
            rec = record_of(p.payload)
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
        return [
            (record_of(h.payload), h.score) for h in hits if h.id != rec.id and h.score >= floor
        ]

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
