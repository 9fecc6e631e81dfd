"""The ingest's embedder in a process of its own (decision 583).

The memory service runs one Python interpreter: its readers and its ingest share one GIL. A
torch forward pass releases the GIL while an operation computes but takes it back between
operations, a few hundred times a batch; with readers busy it waited up to a switch interval
each time, and the ingest kept 0.62 of its solo rate under 20 reading clients (measured; the
service never used more than one core). In a child process the forward pass has a GIL of its
own: it competes with the readers for cores, not for the lock.

:class:`ProcessEmbedder` is an :class:`~nika_tui.domain.ports.Embedder` for the ingest only
(queries stay on the service's own model, with their cache and batching). Until the child has
loaded its model, and whenever it is gone, calls go to ``fallback`` (the service's own model
through its gate), so the ingest never waits for the child and never stops with it; a child
that died is started again after :data:`RESPAWN_S`.

Frames on the child's stdin / stdout (:mod:`nika_tui.services.embed_worker`): a 4-byte
big-endian length, then the body. Parent → child: a JSON list of texts. Child → parent: one
``R`` + JSON ``{"dimension", "name"}`` once loaded, then per request ``V`` + the vectors as
float64 (the model's float32 values, bit for bit) or ``E`` + a message.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import IO

from nika_tui.domain.ports import Embedder

log = logging.getLogger("nika.embed_process")

START_AFTER_S = 5.0
"""The child starts with the first call this long after the service built it, not sooner:
loading torch takes a core for 2-3 s, and at a restart with a backlog that load beside the
service's own start pushed its first answered recall from 1.1 s to 2.1 s after the spawn
(measured). The replay's first batches embed in-process meanwhile, as before."""
RESPAWN_S = 60.0
"""A child that died is started again at most this often (the fallback serves meanwhile)."""
MAX_FRAME = 256 * 1024 * 1024
"""A frame longer than this is a broken stream, not a reply."""
_ENV_KEEP = ("PATH", "HOME", "LANG", "TMPDIR", "VIRTUAL_ENV", "SYSTEMROOT")
_ENV_PREFIXES = ("LC_", "PYTHON", "HF_", "OMP_", "MKL_", "OPENBLAS_", "TORCH")


def child_env(environ: dict[str, str]) -> dict[str, str]:
    """The child's environment: what a Python process and torch need, nothing else (no keys,
    no tokens: the child reads texts and writes vectors)."""
    return {k: v for k, v in environ.items() if k in _ENV_KEEP or k.startswith(_ENV_PREFIXES)}


def write_frame(out: IO[bytes], body: bytes) -> None:
    """One frame: a 4-byte big-endian length, then ``body``; flushed."""
    out.write(struct.pack(">I", len(body)) + body)
    out.flush()


def read_frame(src: IO[bytes]) -> bytes | None:
    """The next frame's body; None at end of stream.

    Raises:
        EOFError: the stream ended inside a frame, or announced one over :data:`MAX_FRAME`.
    """
    head = _read_exact(src, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">I", head)
    if size > MAX_FRAME:
        raise EOFError(f"a frame of {size} bytes: the stream is broken")
    body = _read_exact(src, size) if size else b""
    if body is None:
        raise EOFError("the stream ended inside a frame")
    return body


def _read_exact(src: IO[bytes], size: int) -> bytes | None:
    chunks: list[bytes] = []
    left = size
    while left:
        chunk = src.read(left)
        if not chunk:
            if left == size:
                return None
            raise EOFError("the stream ended inside a frame")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class ProcessEmbedder:
    """The ingest's embedder, run by a child process; ``fallback`` serves when it cannot."""

    def __init__(
        self,
        fallback: Embedder,
        threads: int = 1,
        start_after_s: float = START_AFTER_S,
        respawn_s: float = RESPAWN_S,
    ) -> None:
        """The child starts with a call (a service that never ingests starts none).

        Args:
            fallback: the in-process embedder (same model) used until the child is ready and
                whenever it is gone.
            threads: the child's torch threads (``NIKA_EMBED_THREADS``).
            start_after_s: see :data:`START_AFTER_S`.
            respawn_s: see :data:`RESPAWN_S`.
        """
        self.fallback = fallback
        self._threads = threads
        self._born = time.monotonic()
        self._start_after_s = start_after_s
        self._respawn_s = respawn_s
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._ready = threading.Event()
        self._started_at: float | None = None
        self._closed = False
        self.served = 0
        """Texts the child embedded (the rest went to the fallback)."""

    @property
    def dimension(self) -> int:
        """The model's vector size (the fallback's: the same model)."""
        return self.fallback.dimension

    @property
    def name(self) -> str:
        """The model's name (the fallback's: the same model)."""
        return self.fallback.name

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def serving(self) -> bool:
        """True while the child embeds the ingest's texts (else the fallback does)."""
        return self._ready.is_set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait until the child serves (its model loaded)."""
        return self._ready.wait(timeout)

    def start(self) -> None:
        """Start the child if none runs (it loads its model on its own; calls use the
        fallback meanwhile)."""
        with self._lock:
            if self._closed or self.pid is not None:
                return
            self._started_at = time.monotonic()
            self._ready.clear()
            cmd = [sys.executable, "-m", "nika_tui.services.embed_worker"]
            cmd += ["--threads", str(self._threads)]
            try:
                proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    env=child_env(dict(os.environ)),
                    start_new_session=True,  # a Ctrl-C meant for the service is its to pass on
                )
            except OSError as exc:
                log.warning("the ingest embedder process did not start: %s", exc)
                return
            self._proc = proc
        threading.Thread(
            target=self._await_ready, args=(proc,), name="nika-embed-child", daemon=True
        ).start()

    def _await_ready(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        try:
            frame = read_frame(proc.stdout)
        except (OSError, EOFError, ValueError) as exc:  # ValueError: closed by close()
            frame, reason = None, str(exc)
        else:
            reason = "it exited while loading"
        if frame is not None and frame[:1] == b"R":
            info = json.loads(frame[1:])
            if int(info.get("dimension", 0)) != self.fallback.dimension:
                reason = f"its model gives {info.get('dimension')}-d vectors"
            else:
                with self._lock:
                    if self._proc is proc and not self._closed:  # not closed meanwhile
                        self._ready.set()
                        log.info("the ingest embeds in process %d", proc.pid)
                        return
        if self._closed:  # the service stopped while the child loaded: nothing to report
            self._stop(proc)
            return
        if frame is not None and frame[:1] == b"E":
            reason = frame[1:].decode("utf-8", "replace")
            self._closed = True  # the model cannot load there: it would not at a respawn either
        log.warning("the ingest embeds in the service (the child did not load: %s)", reason)
        self._stop(proc)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order: by the child when it serves, else by the fallback."""
        if not texts:
            return []
        if not self._ready.is_set():
            self._maybe_respawn()
            return self.fallback.embed(texts)
        with self._lock:
            proc = self._proc
            vectors = self._ask(proc, list(texts)) if proc is not None else None
        if vectors is None:
            return self.fallback.embed(texts)
        self.served += len(texts)
        return vectors

    def _ask(self, proc: subprocess.Popen[bytes], texts: list[str]) -> list[list[float]] | None:
        """The child's vectors, or None (logged; the child is stopped) if it failed."""
        assert proc.stdin is not None and proc.stdout is not None
        try:
            write_frame(proc.stdin, json.dumps(texts).encode("utf-8"))
            frame = read_frame(proc.stdout)
        except (OSError, EOFError, ValueError) as exc:
            frame, reason = None, str(exc) or type(exc).__name__
        else:
            reason = "it exited"
        if frame is not None and frame[:1] == b"V":
            dim = self.fallback.dimension
            flat = struct.unpack(f"<{(len(frame) - 1) // 8}d", frame[1:])
            if len(flat) == dim * len(texts):
                return [list(flat[i : i + dim]) for i in range(0, len(flat), dim)]
            reason = f"{len(flat)} numbers for {len(texts)} texts"
        elif frame is not None and frame[:1] == b"E":
            # The model failed on these texts: the fallback (the same model) will say why.
            log.warning("the ingest embedder process failed a batch: %s", frame[1:].decode())
            return None
        log.warning("the ingest embeds in the service again (its process: %s)", reason)
        self._ready.clear()
        self._stop(proc)
        return None

    def _maybe_respawn(self) -> None:
        if self._closed or self.pid is not None:
            return
        now = time.monotonic()
        if self._started_at is None:
            if now - self._born >= self._start_after_s:
                self.start()
        elif now - self._started_at >= self._respawn_s:
            self.start()

    @staticmethod
    def _stop(proc: subprocess.Popen[bytes]) -> None:
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            proc.wait(5)  # end of stdin: the child returns
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def close(self) -> None:
        """Stop the child (the service is stopping); later calls use the fallback."""
        with self._lock:
            self._closed = True
            self._ready.clear()
            proc, self._proc = self._proc, None
        if proc is not None:
            self._stop(proc)
