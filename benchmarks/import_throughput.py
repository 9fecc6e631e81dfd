"""``nika import`` throughput: sessions/s and memories/s against the embedder's own, one run.

Writes S Claude Code sessions of T turns (each turn: a person's prompt → semantic, the agent's
answer → episodic) in a temp dir, then measures, in one process on the embedded Redis, a temp
Qdrant Edge store and the real embedder:

1. ``read_queue``: discover + read + plan + queue on the ingest stream (the ``nika import``
   process's own work) → sessions/s and memories/s;
2. ``ingest``: the memory service draining that stream (embed, store, supersede, flush, ack)
   → memories/s;
3. ``embedder``: the embedder alone on the same texts, in the service's batch size — the
   physical floor of step 2.

``ingest_ratio_vs_embedder`` = embedder-alone time / service drain time (1.0 = the import
costs nothing beyond embedding). Each turn names its own service and port, but the facts of a
project look alike, so supersede finds candidates and the tenant's default judge (the offline
judge, recorded as ``judge`` in the result) decides each pair: an import as it really goes,
not the bare pipeline (memory_service_ingest.py measures that).

Run: ``.venv/bin/python benchmarks/import_throughput.py [SESSIONS] [TURNS]`` (default 50 × 10,
~1 minute on 2 shared cores; the README figures are 50 × 10 runs). Results:
``benchmarks/results/import_throughput.json`` (and printed).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

RESULT = Path(__file__).resolve().parent / "results" / "import_throughput.json"


def write_sessions(root: Path, sessions: int, turns: int) -> None:
    """Claude Code sessions as the CLI writes them (tests/importer/sessions_on_disk.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.importer.sessions_on_disk import claude_session

    t0 = datetime(2026, 1, 5, 9, tzinfo=UTC)
    for s in range(sessions):
        pairs = [
            (
                f"Service svc-{s}-{t} of team {s % 7} listens on port {9000 + t} behind the "
                f"gateway; its owner is dev{t % 5}.",
                f"Recorded that svc-{s}-{t} listens on port {9000 + t}; the runbook and the "
                f"gateway routes were updated accordingly.",
            )
            for t in range(turns)
        ]
        claude_session(root, f"sess-{s:05d}", f"/w/proj{s % 9}", t0 + timedelta(hours=s), pairs)


def main(sessions: int, turns: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="nika-bench-import-"))
    os.environ.update(
        {
            "NIKA_OS_CONFIG_DIR": str(root / "config"),
            "NIKA_OS_DATA_DIR": str(root / "data"),
            "HF_HUB_OFFLINE": "1",
        }
    )
    os.environ.pop("REDIS_URL", None)
    os.environ.pop("QDRANT_URL", None)
    from nika_tui.domain.tenant import TenantConfig
    from nika_tui.engine.builder import build_context
    from nika_tui.engine.server.loop import MemoryService
    from nika_tui.engine.server.pipeline import BATCH
    from nika_tui.hooks.common import redact, worth_keeping_prompt, worth_keeping_turn
    from nika_tui.hooks.context import project_from_cwd
    from nika_tui.importer.discover import Policy, discover
    from nika_tui.importer.run import ImportReport, plan, queue
    from nika_tui.services import redis_keys
    from nika_tui.services.config_store import save_tenant
    from nika_tui.services.redis_server import stop_embedded

    write_sessions(root / "claude", sessions, turns)
    ctx = build_context()
    try:
        config = TenantConfig(tenant_id="bench", display_name="bench")
        save_tenant(config)
        policy = Policy(worth_keeping_prompt, worth_keeping_turn, redact, project_from_cwd)
        report = ImportReport()
        t = time.perf_counter()
        units, _ = discover([str(root / "claude")], dict(os.environ))
        planned = plan(ctx.redis, "bench", units, policy, report)
        queue(ctx.redis, "bench", planned, report)
        read_queue_s = time.perf_counter() - t
        texts = [i.text for i in planned.items]
        ctx.embedder.embed(texts[:BATCH])  # warm-up: the first forward pass is slower
        service = MemoryService(ctx)
        service.setup()
        t = time.perf_counter()
        while ctx.redis.xlen(redis_keys.INGEST_STREAM):
            service.step(block_ms=10)
        ingest_s = time.perf_counter() - t
        t = time.perf_counter()
        for i in range(0, len(texts), BATCH):
            ctx.embedder.embed(texts[i : i + BATCH])
        embed_s = time.perf_counter() - t
        n = report.queued
        out: dict[str, Any] = {
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "judge": config.judge.kind.value,
            "sessions": report.sessions,
            "memories": n,
            "cpus": os.cpu_count(),
            "read_queue": {
                "seconds": round(read_queue_s, 3),
                "sessions_per_s": round(report.sessions / read_queue_s, 1),
                "memories_per_s": round(n / read_queue_s, 1),
            },
            "ingest_memories_per_s": round(n / ingest_s, 1),
            "end_to_end_sessions_per_s": round(report.sessions / (read_queue_s + ingest_s), 2),
            "end_to_end_memories_per_s": round(n / (read_queue_s + ingest_s), 1),
            "embedder_per_s": round(n / embed_s, 1),
            "ingest_ratio_vs_embedder": round(embed_s / ingest_s, 3),
            "processed": service.processed,
        }
        print(json.dumps(out, indent=2))
        RESULT.parent.mkdir(exist_ok=True)
        RESULT.write_text(json.dumps(out, indent=2) + "\n")
    finally:
        ctx.vectors.close()
        stop_embedded()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 50,
        int(sys.argv[2]) if len(sys.argv) > 2 else 10,
    )
