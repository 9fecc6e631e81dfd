"""Embed the next ingest batch on a worker thread while the current one is being stored.

The memory service is single-threaded on purpose (it is the single writer of the stores), so
embedding and storing used to add up. :class:`EmbedAhead` moves only the embedding of the *next*
batch to one background thread: torch and the Rust tokenizer release the GIL in their kernels,
so the loop thread can upsert, supersede, flush and acknowledge batch k while batch k+1 is
being embedded. Nothing else leaves the loop thread; the worker never touches Redis or a store.

Thread safety of the embedder: neither adapter promises concurrent calls. The
sentence-transformers model shares one Hugging Face fast tokenizer whose padding/truncation
state is reconfigured on each call, and a call from a second thread while one is encoding fails
with ``RuntimeError: Already borrowed`` (huggingface/tokenizers#537, transformers#47085); two
forward passes at once would also fight over the same CPU cores. The HTTP adapter's httpx
client could run concurrently, but a local endpoint would only share the same cores. So
:class:`SerialEmbedder` puts one lock around every ``embed`` call, whichever thread makes it:
a recall embedding its query in the loop thread waits, at most, for the batch being embedded.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from nika_tui.domain.ports import Embedder


class SerialEmbedder:
    """An :class:`Embedder` whose ``embed`` calls never overlap, from any thread."""

    def __init__(self, inner: Embedder) -> None:
        """Args:
        inner: the embedder to serialise (its calls run one at a time under one lock).
        """
        self.inner = inner
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        """The wrapped embedder's vector size."""
        return self.inner.dimension

    @property
    def name(self) -> str:
        """The wrapped embedder's model name."""
        return self.inner.name

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-norm vector per text, in order (waits while another call runs)."""
        with self._lock:
            return self.inner.embed(texts)


def serialised(embedder: Embedder) -> SerialEmbedder:
    """``embedder`` behind a lock; an already serialised one is returned as is (one lock)."""
    return embedder if isinstance(embedder, SerialEmbedder) else SerialEmbedder(embedder)


class PendingVectors:
    """The embeddings of one batch, being computed on the worker thread."""

    def __init__(self, future: Future[list[list[float]]], size: int) -> None:
        self._future = future
        self.size = size
        """How many texts were submitted (as many vectors come back)."""

    def done(self) -> bool:
        """True once the embedder returned or raised."""
        return self._future.done()

    def result(self) -> list[list[float]]:
        """Wait for the vectors and return them, one per submitted text, in order.

        Raises:
            Exception: whatever the embedder raised (e.g. ``EmbedderUnavailable``), re-raised
                here, in the caller's thread, so a failed batch takes the caller's usual
                failure path.
        """
        return self._future.result()


class EmbedAhead:
    """One worker thread that embeds batches submitted ahead of their use.

    Batches run in submission order, one at a time (a single worker), through
    :class:`SerialEmbedder`, so they never overlap another ``embed`` call of the same wrapper.
    """

    def __init__(self, embedder: Embedder) -> None:
        """Args:
        embedder: the embedder; wrapped by :func:`serialised` unless it already is. Give
            the loop thread's callers the same wrapper (:attr:`embedder`) so all calls share
            one lock.
        """
        self.embedder = serialised(embedder)
        self._pool: ThreadPoolExecutor | None = None

    def submit(self, texts: Sequence[str]) -> PendingVectors:
        """Start embedding ``texts`` on the worker thread and return at once."""
        if self._pool is None:
            # Created on first use: a service that never ingests starts no thread.
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nika-embed-ahead")
        return PendingVectors(self._pool.submit(self.embedder.embed, list(texts)), len(texts))

    def close(self) -> None:
        """Let a running batch finish, then stop the worker thread (submit restarts one)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
