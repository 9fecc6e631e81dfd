"""Strategy A fresh start (`nika compress --reset`) at N memories: time, live points, recall@5.

Builds a synthetic history in a temp install (embedded Redis, Qdrant Edge, the real embedder):
subjects ``(project, component)`` each with one current fact ("The {component} of {project}
runs on host … port …"); 30 % of them moved once or twice before (retired facts chained by
``superseded_by``), 20 % were recorded again by later sessions (1-2 exact duplicates, still
current), plus episodic session notes (20 % of subjects) and 2 % private facts (``#private``).
A hierarchy: one strategy, a project per 64 subjects with five jobs (two done, two open, one
todo). The repo is a clone of a local bare remote (public: private facts stay local).

Measured in one run: the reset's wall time and its stages; the physical floor beside it (the
embedder alone on a sample of the texts the reset re-embeds, before and after the reset, scaled
to all of them: re-embedding is the reset's irreducible work); live points before and after;
recall@5 of a fixed query set (200 subjects, "which host runs the {component} of {project}")
before and after.

Usage: ``.venv/bin/python benchmarks/strategy_a_reset.py [N]`` (default 5,000; the embedder
does most of the work: ~3.5 ms a text on a quiet 2-core machine, so ~1 min, far more on a busy
one). The full size: ``.venv/bin/python benchmarks/strategy_a_reset.py 50000`` (~6-10 min
quiet: run it on a quiet machine). Results: ``benchmarks/results/strategy_a_reset_{N}.json``.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

COMPONENTS = tuple(
    f"{a} {b}"
    for a in ("billing", "search", "auth", "media", "orders", "reports", "mail", "cache")
    for b in ("service", "worker", "database", "queue", "gateway", "scheduler", "index", "proxy")
)
T0 = datetime(2026, 6, 1, tzinfo=UTC)
TENANT = "bench"
QUERIES = 200
FLOOR_SAMPLE = 1000
"""Texts embedded alone to measure the floor (scaled to the kept count)."""


def _history(n: int, seed: int = 7) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """Rows ``{text, project, job, valid_from, status, chain, layer, session}`` and queries."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    facts: list[tuple[str, str]] = []
    s = 0
    while len(rows) < n:
        project, component = f"p{s // len(COMPONENTS)}", COMPONENTS[s % len(COMPONENTS)]
        job = f"{project}-j{rng.randrange(5)}"
        day = rng.randrange(120)
        moves = rng.choices((0, 1, 2), (70, 20, 10))[0]
        chain: list[dict[str, Any]] = []
        for m in range(moves, -1, -1):
            host, port = f"h{rng.randrange(10_000)}", 8000 + rng.randrange(1000)
            text = f"The {component} of {project} runs on host {host}.internal port {port}"
            chain.append(
                {
                    "text": text,
                    "project": project,
                    "job": job,
                    "layer": "semantic",
                    "valid_from": T0 + timedelta(days=day - 10 * m),
                    "status": "current",
                }
            )
        for older, newer in itertools.pairwise(chain):
            older["status"], older["superseded_by_row"] = "retired", newer
        current = chain[-1]
        if rng.random() < 0.02:
            current["text"] = "#private " + current["text"]
        rows += chain
        for k in range(rng.choices((0, 1, 2), (80, 12, 8))[0]):
            rows.append(
                {
                    **current,
                    "valid_from": current["valid_from"] + timedelta(days=k + 1),
                    "session": f"s{s}-{k}",
                }
            )
        if rng.random() < 0.2:
            rows.append(
                {
                    "text": f"Session {s}: tuned the {component} of {project} after an "
                    f"incident ({rng.choice(('timeouts', 'memory', 'disk', 'latency'))})",
                    "project": project,
                    "job": job,
                    "layer": "episodic",
                    "valid_from": T0 + timedelta(days=day),
                    "status": "current",
                }
            )
        facts.append((f"which host runs the {component} of {project}", current["text"]))
        s += 1
    picks = random.Random(seed + 1).sample(facts, min(QUERIES, len(facts)))
    return rows, picks  # whole subjects: a little over n


def _seed(ctx: Any, rows: list[dict[str, Any]]) -> None:
    import uuid

    from nika_tui.domain.envelope import NikaMeta
    from nika_tui.domain.hierarchy import HierarchyNode, Level, NodeStatus
    from nika_tui.domain.memory import Layer, MemoryRecord, Status, content_hash
    from nika_tui.domain.ports import VectorPoint

    nodes = [
        HierarchyNode(id="s", level=Level.STRATEGY, status=NodeStatus.IN_PROGRESS, updated_at=T0)
    ]
    statuses = (
        NodeStatus.DONE,
        NodeStatus.DONE,
        NodeStatus.IN_PROGRESS,
        NodeStatus.TODO,
        NodeStatus.IN_PROGRESS,
    )
    for project in sorted({r["project"] for r in rows}):
        nodes.append(
            HierarchyNode(
                id=project,
                level=Level.PROJECT,
                parent_id="s",
                updated_at=T0,
                status=NodeStatus.IN_PROGRESS,
            )
        )
        for j, status in enumerate(statuses):
            nodes.append(
                HierarchyNode(
                    id=f"{project}-j{j}",
                    level=Level.JOB,
                    parent_id=project,
                    status=status,
                    updated_at=T0,
                )
            )
    # One write: upserted one by one, 4,700 nodes (50,000 memories) rewrite the file 4,700 times.
    ctx.hierarchy(TENANT).upsert_many(nodes)
    for r in rows:
        r["id"] = str(uuid.uuid4())
    for r in rows:
        newer = r.get("superseded_by_row")
        r["superseded_by"] = newer["id"] if newer else None
    batch = 256
    for first in range(0, len(rows), batch):
        part = rows[first : first + batch]
        # Set-up, not measured: a re-recorded text is embedded once.
        unique = list(dict.fromkeys(r["text"] for r in part))
        by_text = dict(zip(unique, ctx.embedder.embed(unique), strict=True))
        vectors = [by_text[r["text"]] for r in part]
        by_layer: dict[Layer, list[VectorPoint]] = {}
        for r, v in zip(part, vectors, strict=True):
            layer = Layer(r["layer"])
            rec = MemoryRecord(
                id=r["id"],
                tenant_id=TENANT,
                layer=layer,
                text=r["text"],
                meta=NikaMeta(
                    timestamp=r["valid_from"],
                    project_id=r["project"],
                    job_id=r["job"],
                    session_id=r.get("session", ""),
                ),
                status=Status(r["status"]),
                valid_from=r["valid_from"],
                asserted_at=r["valid_from"],
                superseded_by=r["superseded_by"],
                retired_at=r["valid_from"] + timedelta(days=1)
                if r["status"] == "retired"
                else None,
                content_hash=content_hash(TENANT, layer, r["text"], r["project"]),
            )
            by_layer.setdefault(layer, []).append(
                VectorPoint(rec.id, v, rec.text, rec.to_payload())
            )
        for layer, points in by_layer.items():
            ctx.vectors.upsert(TENANT, layer, points)
    ctx.vectors.flush()


def _recall_at_5(ctx: Any, queries: list[tuple[str, str]]) -> float:
    from nika_tui.domain.requests import RecallQuery
    from nika_tui.engine.recall import recall

    found = 0
    vectors = ctx.embedder.embed([q for q, _ in queries])  # one batch: the model's own cost
    for (query, expected), vector in zip(queries, vectors, strict=True):
        q = RecallQuery(tenant_id=TENANT, query=query, limit=5)
        hits = recall(ctx, q, vector).hits
        found += any(h.record.text == expected for h in hits)
    return round(found / len(queries), 4)


def _per_text(ctx: Any, texts: list[str]) -> float:
    """Seconds per text of the embedder alone, in the reset's batch size."""
    started = time.monotonic()
    for first in range(0, len(texts), 128):
        ctx.embedder.embed(texts[first : first + 128])
    return (time.monotonic() - started) / max(1, len(texts))


def _torch_threads() -> int:
    import torch

    return int(torch.get_num_threads())


def _say(what: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {what}", file=sys.stderr, flush=True)


def main(n: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="nika-bench-a-"))
    os.environ.update(
        {
            "NIKA_OS_CONFIG_DIR": str(root / "config"),
            "NIKA_OS_DATA_DIR": str(root / "data"),
            "HF_HUB_OFFLINE": "1",
        }
    )
    os.environ.pop("REDIS_URL", None)
    os.environ.pop("QDRANT_URL", None)
    from nika_tui.domain.memory import Layer
    from nika_tui.domain.tenant import TenantConfig
    from nika_tui.engine.builder import build_context
    from nika_tui.engine.compress import current_memories
    from nika_tui.engine.reset import reset
    from nika_tui.services.config_store import save_tenant
    from nika_tui.services.redis_server import stop_embedded

    remote, work = root / "remote.git", root / "knowledge"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run(["git", "clone", "-q", str(remote), str(work)], check=True)
    save_tenant(TenantConfig(tenant_id=TENANT, display_name="bench", knowledge_repo=str(work)))
    ctx = build_context()
    load_start = os.getloadavg()[0]
    try:
        rows, queries = _history(n)
        _say(f"seeding {len(rows)} memories")
        started = time.monotonic()
        _seed(ctx, rows)
        seed_s = time.monotonic() - started
        _say("recall before")
        before = _recall_at_5(ctx, queries)
        _say("floor before")
        current = [r["text"] for r in rows if r["status"] == "current"]
        sample = random.Random(3).sample(current, min(FLOOR_SAMPLE, len(current)))
        per_text_before = _per_text(ctx, sample)
        _say("reset")
        live_before = sum(ctx.vectors.count(TENANT, layer) for layer in Layer)
        started = time.monotonic()
        result = reset(ctx, TENANT)
        reset_s = time.monotonic() - started
        _say("recall after")
        after = _recall_at_5(ctx, queries)
        _say("floor after")
        kept = [k.record.text for k in current_memories(ctx, TENANT)]
        per_text_after = _per_text(ctx, random.Random(3).sample(kept, min(FLOOR_SAMPLE, len(kept))))
        # Per-text cost of a batched embed is flat: the samples' cost scaled to every kept text,
        # measured before and after the reset (a shared machine's load moves within a run).
        floor_s = (per_text_before + per_text_after) / 2 * len(kept)
        report = {
            "n": n,
            "cpus": os.cpu_count(),
            "seed_embed_s": round(seed_s, 2),
            "reset_s": round(reset_s, 2),
            "reset_stages_s": result["timings_s"],
            "floor_embed_kept_s": round(floor_s, 2),
            "floor_ms_per_text_before_after": [
                round(1000 * per_text_before, 1),
                round(1000 * per_text_after, 1),
            ],
            "reset_vs_floor": round(reset_s / floor_s, 2),
            "live_points_before": live_before,
            "live_points_after": result["live_points_after"],
            "live_point_reduction": round(1 - result["live_points_after"] / live_before, 4),
            "recall_at_5_before": before,
            "recall_at_5_after": after,
            "queries": len(queries),
            "private_kept_local": (result["compress"]["private"] or {}).get("memories", 0),
            "snapshot_bytes": result["snapshot"]["bytes"],
            "ms_per_text_in_reset": round(
                1000 * result["timings_s"]["build"] / max(1, sum(result["built"].values())), 1
            ),
            # The machine is shared: the load beside the run says how far from quiet it was.
            "load_average_start_end": [round(load_start, 1), round(os.getloadavg()[0], 1)],
            "torch_threads": _torch_threads(),
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    finally:
        ctx.vectors.close()
        stop_embedded()
        shutil.rmtree(root, ignore_errors=True)
    out = Path(__file__).parent / "results" / f"strategy_a_reset_{n}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
