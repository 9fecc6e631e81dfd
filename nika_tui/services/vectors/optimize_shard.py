"""Optimise one Qdrant Edge shard in a child process.

``python -m nika_tui.services.vectors.optimize_shard ROOT TENANT LAYER DIM`` opens the shard
``ROOT/TENANT/LAYER`` through :class:`EdgeVectorStore`, runs Qdrant's ``optimize`` (merge the
appendable segments, build the HNSW index), closes it and prints one JSON line
``{"optimized": bool, "seconds": float, "points": int}``; on failure it prints one line to
stderr and exits 1.

Why a process: ``EdgeShard.optimize()`` holds the GIL for its whole run (~10 s per 12-15k
384-d points), which would freeze every thread of the memory service. The parent first takes
the shard offline (closing it frees its WAL lock, see ``EdgeVectorStore.take_offline``), then
only waits on a pipe, which releases the GIL.

Crash safety: Qdrant builds the merged segment under ``temp_segments/`` and swaps it in only
when complete, so a child killed at any moment leaves the shard loadable with every point
(tested). Edge does not clean a killed run's half-built segment on load; the next child does,
while it holds the shard's lock.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

from nika_tui.domain.memory import Layer
from nika_tui.errors import NikaError, StoreUnavailable
from nika_tui.services.vectors.edge import EdgeVectorStore
from nika_tui.services.vectors.optimizer import OptimizeResult


def _clear_stale_builders(shard_dir: Path) -> None:
    """Remove segments half-built by a killed run (only called while holding the shard)."""
    temp = shard_dir / "temp_segments"
    if temp.is_dir():
        for entry in temp.iterdir():
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def optimize_shard(root: Path, tenant_id: str, layer: Layer, dimension: int) -> OptimizeResult:
    """Open one shard, optimise it and close it (run in the child process).

    Raises:
        StoreUnavailable: the shard is missing, locked by another process, or Qdrant failed.
    """
    shard_dir = root / tenant_id / Layer(layer).value
    if not (shard_dir / "edge_config.json").exists():
        raise StoreUnavailable(f"no shard at {shard_dir}", "nothing to optimise")
    store = EdgeVectorStore(root, dimension)
    try:
        points = store.count(tenant_id, layer)  # opens the shard: we hold its lock from here
        _clear_stale_builders(shard_dir)
        started = time.perf_counter()
        optimized = store.optimize(tenant_id, layer)
        seconds = time.perf_counter() - started
    finally:
        store.close()
    return OptimizeResult(optimized, round(seconds, 3), points)


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``ROOT TENANT LAYER DIM``; one JSON line on success, exit 1 on failure."""
    args = sys.argv[1:] if argv is None else argv
    try:
        if len(args) != 4:
            raise StoreUnavailable(
                "usage: python -m nika_tui.services.vectors.optimize_shard ROOT TENANT LAYER DIM"
            )
        root, tenant_id, layer, dim = args
        result = optimize_shard(Path(root), tenant_id, Layer(layer), int(dim))
    except (NikaError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(
        json.dumps(
            {"optimized": result.optimized, "seconds": result.seconds, "points": result.points}
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
