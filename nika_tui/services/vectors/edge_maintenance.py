"""Index maintenance of Qdrant Edge shards: optimise in place or in a child process, take a
shard offline and bring it back (see docs/storage.md, "Index maintenance").
"""

from __future__ import annotations

from pathlib import Path

from nika_tui.domain.memory import Layer
from nika_tui.errors import StoreUnavailable
from nika_tui.services.vectors.common import (
    check_layer,
    check_tenant,
)
from nika_tui.services.vectors.edge_codec import (
    CONFIG_FILE,
    translated,
)
from nika_tui.services.vectors.edge_shards import EdgeShards
from nika_tui.services.vectors.optimizer import ShardOptimizer


class EdgeMaintenance(EdgeShards):
    """Optimising and taking shards offline (the store's maintenance half)."""

    def optimize(self, tenant_id: str, layer: Layer) -> bool:
        """Merge segments and build the HNSW index of one shard (blocking; run it when idle).

        Qdrant Edge runs no background optimizer: without this, new points stay in appendable
        segments that are searched exhaustively (fast with payload-index filters, slower
        unfiltered on large shards).

        Returns:
            True if anything was optimised.
        """
        shard = self._shard(tenant_id, layer, create=False)
        if shard is None:
            return False
        with translated("optimize", self._where(tenant_id, check_layer(layer))):
            return bool(shard.optimize())

    # --- index maintenance (see docs/storage.md, "Index maintenance") -----------------------
    def is_open(self, tenant_id: str, layer: Layer) -> bool:
        """True when this process holds the shard open (opening one costs a segment load)."""
        with self._lock:
            return (check_tenant(tenant_id), check_layer(layer)) in self._shards

    def pending_index(self, tenant_id: str, layer: Layer) -> int:
        """How many points of the shard are not in an HNSW-indexed segment yet (0: no shard).

        Qdrant's ``indexed_vectors_count`` counts every vector that sits in an index: the sparse
        BM25 vectors always do (their inverted index is built on write), the dense vectors only
        once :meth:`optimize` moved them into an HNSW segment. With two vectors per point, an
        unoptimised shard reports ``indexed == points`` and a fully optimised one
        ``indexed == 2 * points`` (measured on qdrant-edge 0.9.0: 8,000 points → 8,000 → 16,000;
        10 more points → 16,010), so ``2 * points - indexed`` is the number of dense vectors
        still searched exhaustively. Deleted points can stay counted as indexed until a merge
        vacuums them (100 of 8,000 deleted: indexed stays 16,000), which makes this an
        underestimate (clamped at 0), never an overestimate.
        """
        shard = self._shard(tenant_id, layer, create=False)
        if shard is None:
            return 0
        with translated("info", self._where(tenant_id, check_layer(layer))):
            info = shard.info()
        return max(0, 2 * int(info.points_count) - int(info.indexed_vectors_count))

    def is_offline(self, tenant_id: str, layer: Layer) -> bool:
        """True between :meth:`take_offline` and :meth:`bring_online` for this shard."""
        with self._lock:
            return (check_tenant(tenant_id), check_layer(layer)) in self._offline

    def take_offline(self, tenant_id: str, layer: Layer) -> Path | None:
        """Flush and close one shard so another process may open it (its WAL lock is freed).

        Until :meth:`bring_online`, every call touching this shard raises
        :class:`StoreUnavailable` ("being optimised — retry in a few seconds"); other shards
        are unaffected.

        Returns:
            The shard's directory, or None if it does not exist (nothing is marked offline).
        """
        tenant_id = check_tenant(tenant_id)
        layer = check_layer(layer)
        key = (tenant_id, layer)
        path = self._path(tenant_id, layer)
        with self._lock:
            if not (path / CONFIG_FILE).exists():
                return None
            # Marked under the lock that _shard takes: no call can reopen it after this point.
            self._offline.add(key)
            shard = self._shards.pop(key, None)
        if shard is not None:
            try:
                with translated("close", str(path)):
                    shard.flush()
                    shard.close()
            except StoreUnavailable:
                with self._lock:
                    self._offline.discard(key)
                raise
        return path

    def bring_online(self, tenant_id: str, layer: Layer) -> None:
        """Clear the offline mark; the shard reopens lazily on its next use."""
        with self._lock:
            self._offline.discard((check_tenant(tenant_id), check_layer(layer)))

    def optimize_offline(self, tenant_id: str, layer: Layer, timeout_s: float = 600) -> bool:
        """Optimise one shard in a child process (blocking; for benchmarks and the CLI).

        The shard is taken offline, ``python -m nika_tui.services.vectors.optimize_shard``
        optimises it (Qdrant's optimize holds the GIL for seconds, so it never runs in a
        process that serves anything), and the shard is brought online again in every case.
        A killed or failed child leaves the shard as it was: Qdrant builds the new segment
        aside and swaps it in only when complete.

        Returns:
            True if anything was optimised (False also when the shard does not exist).

        Raises:
            StoreUnavailable: the child failed or ran past ``timeout_s`` (with its stderr).
        """
        if self.take_offline(tenant_id, layer) is None:
            return False
        try:
            child = ShardOptimizer.start(self._root, tenant_id, layer, self._dimension)
            return child.wait(timeout_s).optimized
        finally:
            self.bring_online(tenant_id, layer)
