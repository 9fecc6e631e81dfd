"""The parent side of optimising one Qdrant Edge shard in a child process: start the child
(``python -m nika_tui.services.vectors.optimize_shard``), wait for it, read its result.

Why a process, and why it is crash safe: see :mod:`nika_tui.services.vectors.optimize_shard`.
This module imports no shard code, so the store can start a child without a cycle.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from nika_tui.domain.memory import Layer
from nika_tui.errors import StoreUnavailable

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
