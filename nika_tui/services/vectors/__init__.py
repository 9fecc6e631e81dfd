"""Vector stores (semantic + episodic layers) behind the ``VectorStore`` port.

- :mod:`.edge` — Qdrant Edge in-process, one shard per tenant and layer (the default);
- :mod:`.client` — qdrant-client on a Qdrant server or cluster (``QDRANT_URL``);
- :mod:`.factory` — :func:`open_vector_store` picks one from the environment.

The adapters import qdrant lazily: importing this package stays cheap.
"""

from __future__ import annotations

from nika_tui.services.vectors.common import DENSE, INDEXED_KEYS, SPARSE
from nika_tui.services.vectors.factory import open_vector_store

__all__ = ["DENSE", "INDEXED_KEYS", "SPARSE", "open_vector_store"]
