"""One embedding model shared by the ingest (bulk) and the readers (queries), reads first.

The model cannot run two calls at once (see :mod:`nika_tui.engine.embed_ahead`: the fast
tokenizer's state is per call, and two forward passes would fight over the same cores), so
every call holds the gate. Two things keep reads short while the ingest embeds:

- **micro-batches**: a bulk call (an ingest batch of up to 128 texts) is embedded
  :data:`MICRO_BATCH` texts at a time, and between two micro-batches every waiting query goes
  first. A query waits for at most one micro-batch, never for a whole ingest batch;
- **query batching**: a query that finds the model busy queues; the first queued query to find
  it free embeds every query queued so far in one call (combining, no added delay), so twenty
  concurrent recalls cost a few forward passes, not twenty;
- **a query cache**: the vectors of the last :data:`QUERY_CACHE` query texts (whitespace
  collapsed: the tokenizer splits on it, so the vector is the same) are kept, so a repeated
  query (a session-start recall, an MCP retry, a hook fired twice) skips the model entirely.
  The model is fixed for the gate's life, so an entry never goes stale.

:attr:`EmbedGate.bulk` and :attr:`EmbedGate.query` are the two doors, each an
:class:`~nika_tui.domain.ports.Embedder`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from nika_tui.domain.ports import Embedder

MICRO_BATCH = 16
"""Texts per bulk micro-batch: a new query waits for at most one. Measured on memory-sized
texts (one torch thread): 7.4 ms a text at 16, 7.6 at 32, so ~120 ms a micro-batch instead of
~245 ms. At 8 a query waited less but the ingest kept less of its rate (decision 582)."""
QUERY_CACHE = 2048
"""Query vectors kept (least recently used dropped): 384 floats each, ~3 MB as Python lists."""


def cache_key(text: str) -> str:
    """``text`` with its whitespace collapsed (the tokenizer splits on it: same vector)."""
    return " ".join(text.split())


@dataclass
class _Ask:
    """One query call waiting for its vectors."""

    texts: list[str]
    vectors: list[list[float]] = field(default_factory=list)
    error: BaseException | None = None
    done: bool = False


class EmbedGate:
    """Serialises every call of one embedder, queries before bulk micro-batches."""

    def __init__(
        self, inner: Embedder, micro_batch: int = MICRO_BATCH, query_cache: int = QUERY_CACHE
    ) -> None:
        """Args:
        inner: the embedder (never called by two threads at once through this gate).
        micro_batch: texts per bulk call to ``inner``.
        query_cache: query vectors kept (``0``: no cache).
        """
        self.inner = inner
        self.micro_batch = max(1, micro_batch)
        self.query_cache = max(0, query_cache)
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self.cache_hits = 0
        """Query calls answered from the cache without the model (tests and stats)."""
        self._cv = threading.Condition()
        self._busy = False
        self._queries: list[_Ask] = []
        self.bulk: Embedder = _Door(self, bulk=True)
        """The ingest's door: micro-batched, yields to queries."""
        self.query: Embedder = _Door(self, bulk=False)
        """The readers' door: batched across concurrent callers, served first."""

    def queued_queries(self) -> int:
        """Query calls waiting for the model (tests wait on it to prove an overlap)."""
        with self._cv:
            return len(self._queries)

    def embed_bulk(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for ``texts`` in order, one micro-batch at a time, after waiting queries."""
        out: list[list[float]] = []
        items = list(texts)
        for start in range(0, len(items), self.micro_batch):
            with self._cv:
                while self._busy or self._queries:
                    self._cv.wait()
                self._busy = True
            try:
                out.extend(self.inner.embed(items[start : start + self.micro_batch]))
            finally:
                self._release()
        return out

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for ``texts``, embedded with every other query waiting at the same time."""
        ask = _Ask(list(texts))
        with self._cv:
            cached = self._cached(ask.texts)
            if cached is not None:
                self.cache_hits += 1
                return cached
            self._queries.append(ask)
            while not ask.done and self._busy:
                self._cv.wait()
            if ask.done:
                return self._answer(ask)
            # The model is free and our query is still queued: lead a call for all the queue.
            batch, self._queries = self._queries, []
            self._busy = True
        try:
            vectors = self.inner.embed([t for a in batch for t in a.texts])
        except BaseException as exc:  # noqa: BLE001 - re-raised in each waiting caller's thread
            for a in batch:
                a.error = exc
        else:
            at = 0
            for a in batch:
                a.vectors = vectors[at : at + len(a.texts)]
                at += len(a.texts)
            self._remember([t for a in batch for t in a.texts], vectors)
        finally:
            for a in batch:
                a.done = True
            self._release()
        return self._answer(ask)

    def holds(self, text: str) -> bool:
        """True if the cache has the vector of ``text`` (a query of it needs no model)."""
        with self._cv:
            return cache_key(text) in self._cache

    def warm(self, texts: Sequence[str]) -> None:
        """Embed, in one call, those of ``texts`` the cache does not hold (a reader's batch of
        requests: their queries then cost one forward pass, not one each). Nothing without a
        cache."""
        if not self.query_cache:
            return
        with self._cv:
            missing = list(dict.fromkeys(t for t in texts if cache_key(t) not in self._cache))
        if missing:
            self.embed_query(missing)

    def _cached(self, texts: Sequence[str]) -> list[list[float]] | None:
        """Copies of the cached vectors of every text (None unless all are cached); the
        caller holds ``_cv``. Copies: a caller may change its vector, never the cache's."""
        if not self.query_cache or not texts:
            return None
        out: list[list[float]] = []
        for text in texts:
            vector = self._cache.get(cache_key(text))
            if vector is None:
                return None
            self._cache.move_to_end(cache_key(text))
            out.append(list(vector))
        return out

    def _remember(self, texts: Sequence[str], vectors: Sequence[list[float]]) -> None:
        if not self.query_cache:
            return
        with self._cv:
            for text, vector in zip(texts, vectors, strict=True):
                self._cache[cache_key(text)] = list(vector)
                self._cache.move_to_end(cache_key(text))
            while len(self._cache) > self.query_cache:
                self._cache.popitem(last=False)

    def _release(self) -> None:
        with self._cv:
            self._busy = False
            self._cv.notify_all()

    @staticmethod
    def _answer(ask: _Ask) -> list[list[float]]:
        if ask.error is not None:
            raise ask.error
        return ask.vectors


class _Door:
    """An :class:`Embedder` view of the gate (bulk or query)."""

    def __init__(self, gate: EmbedGate, bulk: bool) -> None:
        self._gate = gate
        self._bulk = bulk

    @property
    def dimension(self) -> int:
        """The shared embedder's vector size."""
        return self._gate.inner.dimension

    @property
    def name(self) -> str:
        """The shared embedder's model name."""
        return self._gate.inner.name

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order, through the gate."""
        if self._bulk:
            return self._gate.embed_bulk(texts)
        return self._gate.embed_query(texts)

    def holds(self, text: str) -> bool:
        """See :meth:`EmbedGate.holds` (always False at the bulk door: it has no cache)."""
        return not self._bulk and self._gate.holds(text)

    def warm(self, texts: Sequence[str]) -> None:
        """See :meth:`EmbedGate.warm` (the query door; the bulk door has no cache)."""
        if not self._bulk:
            self._gate.warm(texts)
