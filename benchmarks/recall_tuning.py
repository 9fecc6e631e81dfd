"""Recall quality before and after tuning, on a held-out split of the shipped synthetic set.

The synthetic set (``nika_tui/assets/recall_synthetic.json``: 30 facts, 30 questions they answer,
30 they do not) is ingested into a fresh tenant (real embedder, Qdrant Edge, embedded Redis).
Its questions are split by a seeded shuffle, stratified: the tuner (``nika tune recall``'s code,
autonomous mode) sees one half only; recall@5 and abstention accuracy are measured through the
real :func:`recall` on the other half, before and after, beside the gain the tuner measured on
its own half and that gain's noise.

Run: ``.venv/bin/python benchmarks/recall_tuning.py [--trials 40] [--seed 0] [--start-floor 0.6]``
(under a minute on 2 busy cores, most of it loading the model and ingesting). ``--start-floor``
starts from a mis-set tenant (that floor adopted) to show the tuner recover. Writes
``benchmarks/results/recall_tuning.json`` (``recall_tuning_start_floor.json`` with the option).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.recall_params import Judged
from nika_tui.domain.requests import RecallQuery, RememberRequest
from nika_tui.domain.tenant import AutoActions, AutoMode, TenantConfig
from nika_tui.engine.context import EngineContext
from nika_tui.engine.ingest import IngestOutcome, ingest_batch
from nika_tui.engine.recall import recall
from nika_tui.settings import Settings

TENANT = "tuning-bench"
SET = Path(__file__).resolve().parents[1] / "nika_tui" / "assets" / "recall_synthetic.json"
OUT = Path(__file__).resolve().parent / "results" / "recall_tuning.json"


def quality(ctx: EngineContext, held: list[Judged]) -> dict[str, float]:
    """recall@5 over answerable questions, abstention accuracy over the others (real recall)."""
    hits, abstain = [], []
    for label in held:
        ids = [
            h.record.id for h in recall(ctx, RecallQuery(tenant_id=TENANT, query=label.query)).hits
        ]
        if label.expect_none:
            abstain.append(1.0 if not ids else 0.0)
        else:
            hits.append(len(label.useful.intersection(ids[:5])) / len(label.useful))
    return {
        "recall_at_5": round(sum(hits) / len(hits), 3),
        "abstention_accuracy": round(sum(abstain) / len(abstain), 3),
        "n_answerable": len(hits),
        "n_unanswerable": len(abstain),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--start-floor",
        type=float,
        default=None,
        help="start from a mis-set tenant: this PALACE floor adopted before tuning",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="nika-tune-bench-"))
    env = {
        **os.environ,
        "NIKA_OS_CONFIG_DIR": str(root / "config"),
        "NIKA_OS_DATA_DIR": str(root / "data"),
    }
    env.pop("REDIS_URL", None)
    os.environ.update({k: env[k] for k in ("NIKA_OS_CONFIG_DIR", "NIKA_OS_DATA_DIR")})
    from nika_tui.paths import roots
    from nika_tui.services.config_store import save_tenant
    from nika_tui.services.embeddings import SentenceTransformerEmbedder
    from nika_tui.services.redis_server import connect, stop_embedded
    from nika_tui.services.vectors.edge import EdgeVectorStore
    from nika_tui.tuning.tuner import tune

    data = json.loads(SET.read_text())
    actions = AutoActions(tune=AutoMode.AUTONOMOUS)
    save_tenant(
        TenantConfig(tenant_id=TENANT, display_name="bench", auto_actions=actions),
        Settings.from_env(env).roots,
    )
    store = EdgeVectorStore(root / "data" / "qdrant", 384)
    try:
        started = time.perf_counter()
        settings = Settings.from_env(env)
        ctx = EngineContext(
            settings=settings, redis=connect(settings, start=True), vectors=store,
            child_env=env, secrets_env=env,
            embedder=SentenceTransformerEmbedder(),
        )  # fmt: skip
        now = datetime.now(UTC)
        reqs = [
            RememberRequest(tenant_id=TENANT, text=t, meta=NikaMeta(timestamp=now))
            for t in data["facts"]
        ]
        outcomes = ingest_batch(ctx, reqs)
        ids = [o.id if isinstance(o, IngestOutcome) else "" for o in outcomes]
        answerable = [Judged(query=q, useful=frozenset({ids[i]})) for q, i in data["answerable"]]
        unanswerable = [Judged(query=q, expect_none=True) for q in data["unanswerable"]]
        rng = random.Random(args.seed)
        rng.shuffle(answerable)
        rng.shuffle(unanswerable)
        half_a, half_u = len(answerable) // 2, len(unanswerable) // 2
        tune_set = answerable[:half_a] + unanswerable[:half_u]
        held = answerable[half_a:] + unanswerable[half_u:]
        if args.start_floor is not None:
            from nika_tui.domain.recall_params import RecallParams
            from nika_tui.services.recall_params import adopt_params

            start = RecallParams(palace_floor=args.start_floor)
            adopt_params(ctx.redis, TENANT, start, now.isoformat())
        before = quality(ctx, held)
        tuned = tune(ctx, TENANT, trials=args.trials, seed=args.seed, judged=tune_set)
        after = quality(ctx, held)
        result: dict[str, Any] = {
            "trials": args.trials,
            "start_floor": args.start_floor,
            "seed": args.seed,
            "tuned_on": len(tune_set),
            "held_out": len(held),
            "held_out_before": before,
            "held_out_after": after,
            "tuner": {k: tuned[k] for k in ("baseline_metric", "best_metric", "gain",
                                             "noise_sd", "past_2x_noise", "action", "best")},
            "seconds": round(time.perf_counter() - started, 1),
        }  # fmt: skip
    finally:
        store.close()
        stop_embedded(roots(env))
        shutil.rmtree(root, ignore_errors=True)
    if args.start_floor is not None and args.out == OUT:
        args.out = OUT.with_name("recall_tuning_start_floor.json")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
