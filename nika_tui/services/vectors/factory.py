"""Pick the vector store: a Qdrant server when ``QDRANT_URL`` is set, else embedded Qdrant Edge."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from nika_tui.domain.ports import VectorStore
from nika_tui.errors import StoreUnavailable
from nika_tui.paths import Roots, ensure_private_dir, roots

if TYPE_CHECKING:
    from nika_tui.settings import Settings

QDRANT_TIMEOUT_S = 10
"""Seconds a request to a Qdrant server may take before it counts as unavailable."""


def redact_url(url: str) -> str:
    """``url`` without credentials, safe for messages and logs."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        netloc = "***@" + parts.netloc.rpartition("@")[2]  # an IPv6 host keeps its brackets
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return url


def edge_root(where: Roots | None = None) -> str:
    """Where the embedded shards live: ``{data_dir}/qdrant`` (None: the roots of
    ``os.environ``)."""
    return str((roots() if where is None else where).data / "qdrant")


def open_vector_store(
    settings: Settings, dimension: int, secrets: Mapping[str, str] | None = None
) -> VectorStore:
    """The store the settings ask for.

    ``settings.qdrant_url`` set → :class:`ClientVectorStore` on that server (``QDRANT_API_KEY``
    read from ``secrets``, never from a file nor kept), checked with one request so a wrong URL
    fails now. Otherwise → :class:`EdgeVectorStore` under ``{data_dir}/qdrant``.

    Args:
        settings: The entry's settings (``QDRANT_URL`` and the data root, read once).
        dimension: The vector size.
        secrets: Where ``QDRANT_API_KEY`` is read, when it is sent (None: ``os.environ``).

    Raises:
        StoreUnavailable: the server does not answer, or the data dir cannot be created.
    """
    url = settings.qdrant_url
    if url:
        from qdrant_client import QdrantClient

        from nika_tui.services.vectors.client import ClientVectorStore, _translated

        # No version handshake: it costs a request and only warns; get_collections() below
        # is the reachability check that matters.
        client = QdrantClient(
            url=url,
            api_key=(os.environ if secrets is None else secrets).get("QDRANT_API_KEY") or None,
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

    root = settings.data_root / "qdrant"
    try:
        ensure_private_dir(root)
    except OSError as exc:
        raise StoreUnavailable(
            f"cannot create the vector store directory {root}: {exc.strerror}",
            "check permissions of NIKA_OS_DATA_DIR (or XDG_DATA_HOME)",
        ) from exc
    return EdgeVectorStore(root, dimension)
