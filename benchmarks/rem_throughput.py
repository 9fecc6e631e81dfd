"""REM pass throughput: memories consolidated per second, first pass and idempotent re-run.

Loads ``--points`` current memories (default 10,000) into one tenant of a Qdrant Edge store:
``--topics`` topics whose facts sit near a topic centroid (so the re-judge step has real
candidate pairs above the 0.50 supersede threshold), ``--dup-rate`` of them near-duplicate
pairs (cosine 0.97, same text: the merge step's work), 5 % episodic facts repeated across two
sessions (promotion), 2 % tied to an obsolete job (hierarchy) and 2 % server moves
(a fact and its later replacement, which ingest would have judged). Every memory counts as
"today's" (``window=None``), the worst case. Then times :func:`run_rem` twice: the first pass,
and the second one, which must change nothing.

Usage: ``.venv/bin/python benchmarks/rem_throughput.py [--points N]``.
Results: ``benchmarks/results/rem_throughput.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.hierarchy import HierarchyNode, Level, NodeStatus
from nika_tui.domain.memory import Layer, MemoryRecord, content_hash
from nika_tui.domain.ports import VectorPoint
from nika_tui.domain.tenant import TenantConfig
from nika_tui.services.vectors.edge import EdgeVectorStore

DIM = 384
NOW = datetime(2026, 12, 2, 3, 0, tzinfo=UTC)
TENANT = "rem"
HOSTS = ("alpha", "beta", "gamma", "delta", "epsilon")
"""Hosts of the staging servers that move."""


class _NoEmbed:
    dimension = DIM
    name = "none"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise RuntimeError("REM must not embed")


def _norm(v: np.ndarray) -> np.ndarray:
    out: np.ndarray = v / np.linalg.norm(v, axis=-1, keepdims=True)
    return out


def build(
    n: int, topics: int, dup_rate: float, seed: int
) -> list[tuple[MemoryRecord, list[float]]]:
    """Memories with vectors (see the module docstring for the mix)."""
    rng = np.random.default_rng(seed)
    prng = random.Random(seed)
    centroids = _norm(rng.standard_normal((topics, DIM)))
    rows: list[tuple[MemoryRecord, list[float]]] = []

    def record(text: str, layer: Layer, i: int, **meta: Any) -> MemoryRecord:
        valid = NOW - timedelta(hours=prng.uniform(1, 20))
        return MemoryRecord(
            id=str(__import__("uuid").UUID(int=prng.getrandbits(128), version=4)),
            tenant_id=TENANT,
            layer=layer,
            text=text,
            meta=NikaMeta(timestamp=valid, project_id=f"p{i % 4}", **meta),
            valid_from=valid,
            asserted_at=valid,
            content_hash=content_hash(TENANT, layer, text, f"p{i % 4}"),
        )

    i = 0
    while len(rows) < n:
        t = i % topics
        vec = _norm(centroids[t] + 0.75 * rng.standard_normal(DIM) / np.sqrt(DIM) * 1.2)
        text = f"Service {t} component {i} uses library lib{i}"
        roll = prng.random()
        if roll < dup_rate / 2:
            rec = record(text, Layer.SEMANTIC, t)
            twin = record(text, Layer.SEMANTIC, t)
            noise = _norm(rng.standard_normal(DIM))
            near = _norm(0.97 * vec + np.sqrt(1 - 0.97**2) * (noise - (noise @ vec) * vec))
            rows += [(rec, vec.tolist()), (twin, near.tolist())]
        elif roll < dup_rate / 2 + 0.025:
            a = record(f"Tests of service {t} need fixture {i}", Layer.EPISODIC, t, session_id="s1")
            b = record(f"Tests of service {t} need fixture {i}", Layer.EPISODIC, t, session_id="s2")
            rows += [(a, vec.tolist()), (b, vec.tolist())]
        elif roll < dup_rate / 2 + 0.045:
            rows.append((record(text, Layer.SEMANTIC, t, job_id="JOB-OLD"), vec.tolist()))
        elif roll < dup_rate / 2 + 0.065:
            # a server move the ingest path missed: the re-judge step's REPLACE work
            host = prng.choice(HOSTS)
            old = record(
                f"The staging server of service {t}-{i} is {host}.internal", Layer.SEMANTIC, t
            )
            new = record(
                f"The staging server of service {t}-{i} moved to zeta.internal", Layer.SEMANTIC, t
            )
            old = old.model_copy(update={"valid_from": new.valid_from - timedelta(days=2)})
            rows += [(old, vec.tolist()), (new, _norm(vec + 0.3 * centroids[t]).tolist())]
        else:
            rows.append((record(text, Layer.SEMANTIC, t), vec.tolist()))
        i += 1
    return rows[:n]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and write its JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=400)
    parser.add_argument("--dup-rate", type=float, default=0.10)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "rem_throughput.json"
    )
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="nika-rem-bench-"))
    env = {
        **os.environ,
        "NIKA_OS_CONFIG_DIR": str(root / "config"),
        "NIKA_OS_DATA_DIR": str(root / "data"),
    }
    env.pop("REDIS_URL", None)
    from nika_tui.engine.context import EngineContext
    from nika_tui.engine.rem.run import run_rem
    from nika_tui.paths import roots
    from nika_tui.services.config_store import save_tenant
    from nika_tui.services.redis_server import connect, stop_embedded
    from nika_tui.settings import Settings

    save_tenant(
        TenantConfig(tenant_id=TENANT, display_name="REM bench"), Settings.from_env(env).roots
    )
    store = EdgeVectorStore(root / "data" / "qdrant", DIM, flush_writes=False)
    result: dict[str, Any] = {"params": {k: str(v) for k, v in vars(args).items()}}
    try:
        rows = build(args.points, args.topics, args.dup_rate, 1)
        for layer in Layer:
            points = [
                VectorPoint(r.id, v, r.text, r.to_payload()) for r, v in rows if r.layer is layer
            ]
            for start in range(0, len(points), 2000):
                store.upsert(TENANT, layer, points[start : start + 2000])
        store.flush()
        # Durable writes during the pass, as in the service.
        store = EdgeVectorStore(root / "data" / "qdrant", DIM)
        settings = Settings.from_env(env)
        ctx = EngineContext(
            child_env=env, secrets_env=env, settings=settings, redis=connect(settings, start=True),
            vectors=store, embedder=_NoEmbed(), clock=lambda: NOW,
        )  # fmt: skip
        ctx.hierarchy(TENANT).upsert(
            HierarchyNode(id="JOB-OLD", level=Level.JOB, status=NodeStatus.OBSOLETE, updated_at=NOW)
        )
        passes = []
        for label in ("first", "second"):
            started = time.perf_counter()
            summary = run_rem(ctx, TENANT, window=None).summary()
            seconds = time.perf_counter() - started
            before = sum(v["current"] for v in summary["before"].values())
            after = sum(v["current"] for v in summary["after"].values())
            passes.append(
                {
                    "pass": label,
                    "seconds": round(seconds, 2),
                    "memories_per_s": round(before / seconds, 1),
                    "current_before": before,
                    "current_after": after,
                    "changed": summary["changed"],
                    "steps": {
                        k: {"retired": len(v["retired"]), "added": len(v["added"]),
                            "reviews": v["reviews"], "judged": v["judged"]}
                        for k, v in summary["steps"].items()
                    },
                    "load_average": [round(x, 2) for x in os.getloadavg()],
                }
            )  # fmt: skip
            print(json.dumps(passes[-1]), flush=True)
        result["passes"] = passes
    finally:
        store.close()
        stop_embedded(roots(env))
        shutil.rmtree(root, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
