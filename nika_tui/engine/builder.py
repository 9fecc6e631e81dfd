"""The one place an engine is built: the stores, the embedder and Redis from the environment.

- :func:`build_context`: the memory service's (``nika serve``, ``nika compress`` locally);
- :func:`build_local_context`: a maintenance command's when no service runs (``nika audit``,
  ``purge``, ``rem``): stored vectors only, the embedding model is never loaded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from nika_tui.domain.ports import VectorStore
from nika_tui.engine.context import EngineContext
from nika_tui.errors import NikaError
from nika_tui.paths import ensure_private_dir
from nika_tui.settings import Settings


def build_context(
    env: Mapping[str, str] | None = None,
    settings: Settings | None = None,
    fast_start: bool = False,
) -> EngineContext:
    """The service's context from the environment (starts the embedded Redis if needed).

    Args:
        env: The process environment (``os.environ`` when None): the context's
            ``child_env`` (what its children inherit) and ``secrets_env`` (where the secrets
            are read when sent: ``QDRANT_API_KEY``, the embeddings and providers' keys).
        settings: The knobs and roots the entry point built; None: read from ``env``.
        fast_start: the local embedder starts on numpy while torch loads (``nika serve``).
    """
    from nika_tui.services.embeddings import open_embedder
    from nika_tui.services.redis_server import connect
    from nika_tui.services.vectors import open_vector_store

    e: Mapping[str, str] = dict(os.environ if env is None else env)
    settings = Settings.from_env(e) if settings is None else settings
    r = connect(settings, start=True)
    embedder = open_embedder(settings, e, fast_start=fast_start)
    vectors: VectorStore
    if settings.qdrant_url:
        vectors = open_vector_store(settings, embedder.dimension, e)
    else:
        from nika_tui.services.vectors.edge import EdgeVectorStore

        # Flushed once per batch by the service (before acking), not after every write: the
        # WAL already survives a killed process, and per-write flushes cost ~0.3 s each here.
        vectors = EdgeVectorStore(
            ensure_private_dir(settings.data_root / "qdrant"),
            embedder.dimension,
            flush_writes=False,
        )
    return EngineContext(
        settings=settings,
        redis=r,
        vectors=vectors,
        embedder=embedder,
        child_env=e,
        secrets_env=e,
    )


LOCAL_DIMENSION = 384
"""Vector size of the default local model (all-MiniLM-L6-v2)."""


class StoredVectorsOnly:
    """The embedder of a maintenance pass run outside the service: it must never embed."""

    def __init__(self, dimension: int) -> None:
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        """Vector size of the stores."""
        return self._dimension

    @property
    def name(self) -> str:
        """``stored-vectors-only``."""
        return "stored-vectors-only"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Refuse: audit, purge and REM compare stored vectors."""
        raise NikaError("this maintenance command cannot embed text", "start `nika up`")


def build_local_context(env: Mapping[str, str], settings: Settings | None = None) -> EngineContext:
    """A maintenance pass's context outside the service: the stores only, no embedding model.

    Audits, purges and REM passes compare stored vectors; the embedder refuses to embed.

    Args:
        env: The process environment, as for :func:`build_context`.
        settings: The knobs and roots the entry point built; None: read from ``env``.
    """
    from nika_tui.services.redis_server import connect
    from nika_tui.services.vectors import open_vector_store

    settings = Settings.from_env(env) if settings is None else settings
    raw = settings.embeddings_dimension
    dimension = int(raw) if raw.isdigit() and int(raw) > 0 else LOCAL_DIMENSION
    return EngineContext(
        settings=settings,
        redis=connect(settings, start=True),
        vectors=open_vector_store(settings, dimension, env),
        embedder=StoredVectorsOnly(dimension),
        child_env=dict(env),
        secrets_env=dict(env),
    )
