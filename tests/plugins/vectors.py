"""Vector-store and embedder fixtures: Qdrant Edge in a temp dir, the real embedding model.

- ``embedder``: the real all-MiniLM-L6-v2, loaded once per test session (mark tests that use
  it ``@pytest.mark.embedder``);
- ``edge_store``: an :class:`EdgeVectorStore` (384-d) in the test's tmp dir, closed afterwards;
- ``client_store``: a :class:`ClientVectorStore` (384-d) on ``QdrantClient(":memory:")``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nika_tui.services.embeddings import SentenceTransformerEmbedder
    from nika_tui.services.vectors.client import ClientVectorStore
    from nika_tui.services.vectors.edge import EdgeVectorStore

EMBED_DIM = 384


@pytest.fixture(scope="session")
def embedder() -> SentenceTransformerEmbedder:
    """The real local embedder, loaded once per session (about 7-10 s)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from nika_tui.services.embeddings import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture
def edge_store(tmp_path: Path) -> Iterator[EdgeVectorStore]:
    """An embedded Qdrant Edge store under ``tmp_path/qdrant``, closed after the test."""
    from nika_tui.services.vectors.edge import EdgeVectorStore

    store = EdgeVectorStore(tmp_path / "qdrant", EMBED_DIM)
    yield store
    store.close()


@pytest.fixture
def client_store() -> Iterator[ClientVectorStore]:
    """A qdrant-client store in local ``:memory:`` mode (slow at scale: unit tests only)."""
    from qdrant_client import QdrantClient

    from nika_tui.services.vectors.client import ClientVectorStore

    store = ClientVectorStore(QdrantClient(":memory:"), EMBED_DIM)
    yield store
    store.close()
