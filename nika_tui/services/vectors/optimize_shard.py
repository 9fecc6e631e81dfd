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
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from nika_tui.domain.memory import Layer
from nika_tui.errors import NikaError, StoreUnavailable

MODULE = "nika_tui.services.vectors.optimize_shard"
STDERR_TAIL = 600
"""Characters of the child's stderr kept in an error message."""


@dataclass(frozen=True, slots=True)
class OptimizeResult:
    """What one child run did."""

    optimized: bool
    seconds: float
    points: int


class ShardOptimizer:
    """One running child process optimising one shard (the parent side)."""

    def __init__(self, proc: subprocess.Popen[str], where: str) -> None:
        self.proc = proc
        self.where = where

    @classmethod
    def start(cls, root: Path, tenant_id: str, layer: Layer, dimension: int) -> ShardOptimizer:
        """Start the child; the shard must be offline in this process (its lock free).

        Raises:
            StoreUnavailable: the interpreter could not be started.
        """
        argv = [sys.executable, "-m", MODULE, str(root), tenant_id, Layer(layer).value]
        argv.append(str(dimension))
        where = f"{tenant_id}/{Layer(layer).value}"
        try:
            # Same session (start_new_session=False): a Ctrl-C of the service's terminal
            # reaches the child too. argv holds paths and ids only, never a secret.
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=False,
            )
        except OSError as exc:
            raise StoreUnavailable(
                f"could not start the optimiser of {where}: {exc}",
                "check that the Python interpreter is runnable",
            ) from exc
        return cls(proc, where)

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self.proc.pid

    def kill(self) -> None:
        """SIGKILL the child (safe at any moment: Qdrant's optimize is crash-safe)."""
        if self.proc.poll() is None:
            self.proc.kill()

    def wait(self, timeout_s: float) -> OptimizeResult:
        """Wait for the child (releasing the GIL) and parse its JSON line.

        Raises:
            StoreUnavailable: the child failed, printed no result, or ran past ``timeout_s``
                (it is then killed); the message carries the end of its stderr.
        """
        try:
            out, err = self.proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            raise StoreUnavailable(
                f"optimising {self.where} took more than {timeout_s:g}s and was stopped"
                + _tail(err),
                "the shard is unchanged and online; raise the timeout or retry when idle",
            ) from None
        if self.proc.returncode != 0:
            raise StoreUnavailable(
                f"optimising {self.where} failed (exit {self.proc.returncode})" + _tail(err),
                "the shard is unchanged and online; see the service log",
            )
        try:
            data = json.loads(out.strip().splitlines()[-1])
            return OptimizeResult(
                bool(data["optimized"]), float(data["seconds"]), int(data["points"])
            )
        except (IndexError, KeyError, TypeError, ValueError) as exc:
            raise StoreUnavailable(
                f"the optimiser of {self.where} printed no result: {out[-200:]!r}" + _tail(err),
                "see the service log",
            ) from exc


def _tail(stderr: str | None) -> str:
    text = (stderr or "").strip()
    return f": {text[-STDERR_TAIL:]}" if text else ""


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
    from nika_tui.services.vectors.edge import EdgeVectorStore

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
