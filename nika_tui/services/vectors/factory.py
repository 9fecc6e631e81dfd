"""Pick the vector store: a Qdrant server when ``QDRANT_URL`` is set, else embedded Qdrant Edge."""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

from nika_tui.domain.ports import VectorStore
from nika_tui.errors import StoreUnavailable
from nika_tui.paths import data_dir, ensure_private_dir

QDRANT_TIMEOUT_S = 10
"""Seconds a request to a Qdrant server may take before it counts as unavailable."""


def redact_url(url: str) -> str:
    """``url`` without credentials, safe for messages and logs."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        netloc = "***@" + parts.netloc.rpartition("@")[2]  # an IPv6 host keeps its brackets
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return url


def edge_root(env: Mapping[str, str] | None = None) -> str:
    """Where the embedded shards live: ``{data_dir}/qdrant``."""
    return str(data_dir(env) / "qdrant")


def open_vector_store(env: Mapping[str, str] | None, dimension: int) -> VectorStore:
    """The store this environment asks for.

    ``QDRANT_URL`` set → :class:`ClientVectorStore` on that server (``QDRANT_API_KEY`` read from
    the environment, never from a file), checked with one request so a wrong URL fails now.
    Otherwise → :class:`EdgeVectorStore` under ``{data_dir}/qdrant``.

    Raises:
        StoreUnavailable: the server does not answer, or the data dir cannot be created.
    """
    e = os.environ if env is None else env
    url = e.get("QDRANT_URL", "").strip()
    if url:
        from qdrant_client import QdrantClient

        from nika_tui.services.vectors.client import ClientVectorStore, _translated

        # No version handshake: it costs a request and only warns; get_collections() below
        # is the reachability check that matters.
        client = QdrantClient(
            url=url,
            api_key=e.get("QDRANT_API_KEY") or None,
            timeout=QDRANT_TIMEOUT_S,
            check_compatibility=False,
        )
        try:
            with _translated("connect", "*"):
                client.get_collections()
        except StoreUnavailable as exc:
            client.close()
            raise StoreUnavailable(
                f"cannot reach Qdrant at {redact_url(url)}: {exc.__cause__}",
                "start the server, fix QDRANT_URL / QDRANT_API_KEY, or unset QDRANT_URL to use "
                "the embedded store",
            ) from exc
        return ClientVectorStore(client, dimension)

    from nika_tui.services.vectors.edge import EdgeVectorStore

    root = data_dir(e) / "qdrant"
    try:
        ensure_private_dir(root)
    except OSError as exc:
        raise StoreUnavailable(
            f"cannot create the vector store directory {root}: {exc.strerror}",
            "check permissions of NIKA_OS_DATA_DIR (or XDG_DATA_HOME)",
        ) from exc
    return EdgeVectorStore(root, dimension)
