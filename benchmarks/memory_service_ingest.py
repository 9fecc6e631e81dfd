"""End-to-end ingest throughput of the memory service vs the embedder's own, in one run.

Queues N remember requests on the ingest stream (embedded Redis, temp dirs), then runs the
service loop in-process until the stream is drained: parse, embed (batches of 32), dedupe,
upsert, supersede (rules judge), bus + metrics, flush, ack. The embedder alone embeds the same
texts in the same batch size. Prints JSON.

Two workloads: ``distinct`` (each fact in its own project: no supersede candidate, the pure
pipeline) and ``similar`` (six projects of near-identical facts: every memory is judged against
up to 8 candidates — a worst case for supersede).

Run: ``.venv/bin/python benchmarks/memory_service_ingest.py [N] [distinct|similar]``.
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


def main(n: int, workload: str) -> None:
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
    from nika_tui.domain.envelope import NikaMeta
    from nika_tui.domain.requests import RememberRequest
    from nika_tui.domain.tenant import TenantConfig
    from nika_tui.engine.service import BATCH, MemoryService, build_context
    from nika_tui.services import redis_keys
    from nika_tui.services.config_store import save_tenant
    from nika_tui.services.memory_client import MemoryClient
    from nika_tui.services.redis_server import stop_embedded

    save_tenant(TenantConfig(tenant_id="bench", display_name="Bench"))
    ctx = build_context()
    try:
        services = ["billing", "auth", "search", "gateway", "web", "reports"]
        texts = [
            f"The {services[i % 6]} service {i} runs version {i % 17}.{i % 5} on host "
            f"node-{i}.acme.internal"
            for i in range(n)
        ]
        t = time.perf_counter()
        for i in range(0, n, BATCH):
            ctx.embedder.embed(texts[i : i + BATCH])
        embed_s = time.perf_counter() - t

        client = MemoryClient(ctx.redis)
        t0 = datetime(2026, 3, 1, tzinfo=UTC)
        for i, text in enumerate(texts):
            client.remember(
                RememberRequest(
                    tenant_id="bench",
                    text=text,
                    meta=NikaMeta(
                        timestamp=t0,
                        project_id=f"p{i}" if workload == "distinct" else services[i % 6],
                    ),
                )
            )
        service = MemoryService(ctx)
        service.setup()
        t = time.perf_counter()
        while ctx.redis.xlen(redis_keys.INGEST_STREAM):
            service.step(block_ms=10)
        service_s = time.perf_counter() - t
        report = {
            "n": n,
            "workload": workload,
            "reviews_queued": len(ctx.redis.hkeys(redis_keys.review_queue("bench"))),
            "embedder_per_s": round(n / embed_s, 1),
            "service_ingest_per_s": round(n / service_s, 1),
            "ingest_ratio_vs_embedder": round(embed_s / service_s, 3),
            "processed": service.processed,
        }
        print(json.dumps(report, indent=2))
    finally:
        ctx.vectors.close()
        stop_embedded()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 1000,
        sys.argv[2] if len(sys.argv) > 2 else "distinct",
    )
