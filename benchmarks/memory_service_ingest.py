"""End-to-end ingest throughput of the memory service vs the embedder's own, in one run.

Queues remember requests on the ingest stream (embedded Redis, temp dirs), then runs the
service loop in-process until the stream is drained: parse, embed (batches of ``BATCH``), dedupe,
upsert, supersede (rules judge), bus + metrics, flush, ack. The embedder alone embeds the same
texts in the same batch size. Prints JSON.

Both service modes are measured in the same run, each on its own tenant (same texts, so the
same work): ``off`` (``MemoryService(embed_ahead=False)``, what ``NIKA_EMBED_AHEAD=0`` selects:
embed then store, serially) and ``on`` (embed-ahead: batch k+1 is embedded on a worker thread
while batch k is stored). The machine is shared and the embedder's speed drifts by 2x within a
minute, so the N texts are cut into rounds of ``CHUNK`` (4 batches) and each round times the
embedder alone, the ``off`` service and the ``on`` service on that round's texts, in an order
that rotates from round to round; each ratio is total embedder-alone time / total service time
(≥ 0.90 is DESIGN.md's target). A round restarts the pipeline, so ``on`` pays one unoverlapped
batch per round: slightly pessimistic next to one continuous backlog.

Two workloads: ``distinct`` (each fact in its own project: no supersede candidate, the pure
pipeline) and ``similar`` (six projects of near-identical facts: every memory is judged against
up to 8 candidates — a worst case for supersede).

Run: ``.venv/bin/python benchmarks/memory_service_ingest.py [N] [distinct|similar] [CHUNK]``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nika_tui.domain.ports import Embedder
    from nika_tui.engine.context import EngineContext
    from nika_tui.engine.server.loop import MemoryService

SERVICES = ["billing", "auth", "search", "gateway", "web", "reports"]


def _texts(n: int) -> list[str]:
    return [
        f"The {SERVICES[i % 6]} service {i} runs version {i % 17}.{i % 5} on host "
        f"node-{i}.acme.internal"
        for i in range(n)
    ]


def _embed_alone_s(embedder: Embedder, texts: list[str], batch: int) -> float:
    t = time.perf_counter()
    for i in range(0, len(texts), batch):
        embedder.embed(texts[i : i + batch])
    return time.perf_counter() - t


def _queue(ctx: EngineContext, tenant: str, texts: list[str], first: int, workload: str) -> None:
    from nika_tui.domain.envelope import NikaMeta
    from nika_tui.domain.requests import RememberRequest
    from nika_tui.services.memory_client import MemoryClient

    client = MemoryClient(ctx.redis)
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    for i, text in enumerate(texts, start=first):
        project = f"p{i}" if workload == "distinct" else SERVICES[i % 6]
        client.remember(
            RememberRequest(
                tenant_id=tenant, text=text, meta=NikaMeta(timestamp=t0, project_id=project)
            )
        )


def _drain_s(ctx: EngineContext, service: MemoryService) -> float:
    """Seconds the service loop takes to empty the ingest stream."""
    from nika_tui.services import redis_keys

    t = time.perf_counter()
    while ctx.redis.xlen(redis_keys.INGEST_STREAM):
        service.step(block_ms=10)
    return time.perf_counter() - t


def _measure(
    ctx: EngineContext,
    texts: list[str],
    workload: str,
    chunk: int,
    tenants: tuple[str, str] = ("bench-off", "bench-on"),
    project_offset: int = 0,
) -> dict[str, Any]:
    """Rounds of (embedder alone, service off, service on), order rotating; totals per mode.

    ``tenants`` receive the look-ahead-off and -on writes (``recall_413k.py`` passes two
    populated tenants, so supersede searches a full-size shard). ``project_offset`` shifts the
    ``distinct`` workload's project names, so a second run on a kept store meets no memory of
    the first one.
    """
    from nika_tui.domain.tenant import TenantConfig
    from nika_tui.engine.server.loop import MemoryService
    from nika_tui.engine.server.pipeline import BATCH
    from nika_tui.services.config_store import save_tenant

    raw = ctx.embedder
    services: dict[str, MemoryService] = {}
    tenant_of = dict(zip(("off", "on"), tenants, strict=True))
    for mode in ("off", "on"):
        save_tenant(TenantConfig(tenant_id=tenant_of[mode], display_name=mode))
        services[mode] = MemoryService(ctx, embed_ahead=mode == "on")
        services[mode].setup()
    # The "on" service wrapped ctx.embedder in its lock; uncontended, the "off" one pays ~0.
    totals = {"embedder": 0.0, "off": 0.0, "on": 0.0}
    rounds: list[dict[str, float]] = []
    for r, first in enumerate(range(0, len(texts), chunk)):
        part = texts[first : first + chunk]
        order = ["embedder", "off", "on"]
        order = order[r % 3 :] + order[: r % 3]
        took: dict[str, float] = {}
        for what in order:
            if what == "embedder":
                took[what] = _embed_alone_s(raw, part, BATCH)
            else:
                _queue(ctx, tenant_of[what], part, first + project_offset, workload)
                took[what] = _drain_s(ctx, services[what])
            totals[what] += took[what]
        rounds.append({k: round(len(part) / v, 1) for k, v in took.items()})
    n = len(texts)
    return {
        "embedder_per_s": round(n / totals["embedder"], 1),
        "service_per_s": {m: round(n / totals[m], 1) for m in ("off", "on")},
        "ingest_ratio_vs_embedder": {
            m: round(totals["embedder"] / totals[m], 3) for m in ("off", "on")
        },
        "processed": {m: services[m].processed for m in ("off", "on")},
        "rounds_per_s": rounds,
    }


def main(n: int, workload: str, chunk: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="nika-bench-"))
    os.environ.update(
        {
            "NIKA_OS_CONFIG_DIR": str(root / "config"),
            "NIKA_OS_DATA_DIR": str(root / "data"),
            "HF_HUB_OFFLINE": "1",
        }
    )
    os.environ.pop("REDIS_URL", None)
    os.environ.pop("QDRANT_URL", None)
    from nika_tui.engine.builder import build_context
    from nika_tui.engine.server.pipeline import BATCH
    from nika_tui.services.redis_server import stop_embedded

    ctx = build_context()
    try:
        texts = _texts(n)
        ctx.embedder.embed(texts[:BATCH])  # warm-up: the first forward pass is slower
        report: dict[str, Any] = {"n": n, "workload": workload, "batch": BATCH, "chunk": chunk}
        report["cpus"] = os.cpu_count()
        report.update(_measure(ctx, texts, workload, chunk))
        print(json.dumps(report, indent=2))
    finally:
        ctx.vectors.close()
        stop_embedded()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 1000,
        sys.argv[2] if len(sys.argv) > 2 else "distinct",
        int(sys.argv[3]) if len(sys.argv) > 3 else 512,
    )
