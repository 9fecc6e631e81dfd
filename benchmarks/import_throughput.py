"""``nika import`` throughput: sessions/s and memories/s against the embedder's own, one run.

Writes S sessions of T turns for each agent CLI (Claude Code JSONL, Codex rollouts, Gemini CLI
JSONL, one OpenCode database holding the S sessions; the formats of
``tests/importer/sessions_on_disk.py``) in a temp dir. Each turn: a person's prompt that states
a fact (→ semantic, decision 495) and the agent's answer reporting its work (→ episodic). Then,
per CLI, into a tenant of its own, in one process on the embedded Redis, a temp Qdrant Edge
store and the real embedder:

1. ``read_queue``: discover + read + plan (the fact/decision split included) + queue on the
   ingest stream (the ``nika import`` process's own work) → sessions/s and memories/s;
2. ``ingest``: the memory service draining that stream (embed, store, supersede, flush, ack)
   → memories/s;
3. ``embedder``: the embedder alone on the same texts, in the service's batch size — the
   physical floor of step 2.

``ingest_ratio_vs_embedder`` = embedder-alone time / service drain time (1.0 = the import
costs nothing beyond embedding). Each turn names its own service and port, but the facts of a
project look alike, so supersede finds candidates and the tenant's default judge (the offline
judge, recorded as ``judge`` in the result) decides each pair: an import as it really goes,
not the bare pipeline (memory_service_ingest.py measures that).

Run: ``.venv/bin/python benchmarks/import_throughput.py [SESSIONS] [TURNS] [CLI…]`` (default
50 × 10 for each of claude codex gemini opencode, ~1 minute per CLI on 2 shared cores).
Results: ``benchmarks/results/import_throughput.json`` (and printed).
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


CLIS = ("claude", "codex", "gemini", "opencode")


def write_sessions(root: Path, cli: str, sessions: int, turns: int) -> Path:
    """``sessions`` sessions of ``turns`` turns as ``cli`` writes them; the folder to import."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.importer import sessions_on_disk as disk

    t0 = datetime(2026, 1, 5, 9, tzinfo=UTC)
    folder = root / cli
    every: list[tuple[str, str, datetime, list[tuple[str, str]]]] = []
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
        sid, cwd, at = f"sess-{s:05d}", f"/w/proj{s % 9}", t0 + timedelta(hours=s)
        if cli == "claude":
            disk.claude_session(folder, sid, cwd, at, pairs)
        elif cli == "codex":
            disk.codex_rollout(folder, sid, cwd, at, pairs, items=True)
        elif cli == "gemini":
            disk.gemini_session_jsonl(folder, f"g{s:07d}", at, pairs)
        else:
            every.append((f"ses_{s:012d}", cwd, at, pairs))
    if cli == "opencode":
        disk.opencode_db(folder, every)
    return folder


def main(sessions: int, turns: int, clis: list[str]) -> None:
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
    from nika_tui.engine.builder import build_context
    from nika_tui.services.redis_server import stop_embedded

    ctx = build_context()
    try:
        per_cli = {
            cli: measure(ctx, write_sessions(root, cli, sessions, turns), cli) for cli in clis
        }
        out: dict[str, Any] = {
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "cpus": os.cpu_count(),
            "load_average_1m": round(os.getloadavg()[0], 1),
            "sessions_per_cli": sessions,
            "turns_per_session": turns,
            "per_cli": per_cli,
        }
        print(json.dumps(out, indent=2))
        RESULT.parent.mkdir(exist_ok=True)
        RESULT.write_text(json.dumps(out, indent=2) + "\n")
    finally:
        ctx.vectors.close()
        stop_embedded()
        shutil.rmtree(root, ignore_errors=True)


def measure(ctx: Any, folder: Path, cli: str) -> dict[str, Any]:
    """Import ``folder`` into a tenant of its own, drain the stream, embed the same texts."""
    from nika_tui.domain.tenant import TenantConfig
    from nika_tui.engine.server.loop import MemoryService
    from nika_tui.engine.server.pipeline import BATCH
    from nika_tui.hooks.common import redact, worth_keeping_prompt, worth_keeping_turn
    from nika_tui.hooks.context import project_from_cwd
    from nika_tui.importer.discover import Policy, discover
    from nika_tui.importer.run import ImportReport, plan, queue
    from nika_tui.services import redis_keys
    from nika_tui.services.config_store import save_tenant

    config = TenantConfig(tenant_id=f"bench-{cli}", display_name=f"bench {cli}")
    save_tenant(config)
    policy = Policy(worth_keeping_prompt, worth_keeping_turn, redact, project_from_cwd)
    report = ImportReport()
    t = time.perf_counter()
    units, _ = discover([str(folder)], dict(os.environ))
    planned = plan(ctx.redis, config.tenant_id, units, policy, report)
    queue(ctx.redis, config.tenant_id, planned, report)
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
    return {
        "judge": config.judge.kind.value,
        "sessions": report.sessions,
        "memories": n,
        "semantic": report.semantic,
        "episodic": report.episodic,
        "skipped": len(report.skipped),
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


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 50,
        int(sys.argv[2]) if len(sys.argv) > 2 else 10,
        [c for c in sys.argv[3:] if c in CLIS] or list(CLIS),
    )
