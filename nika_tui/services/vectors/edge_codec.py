"""Qdrant Edge shards on disk: their layout names, the payload codec and the error translation."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from nika_tui.errors import StoreUnavailable
from nika_tui.services.vectors.common import (
    INDEXED_KEYS,
)

CONFIG_FILE = "edge_config.json"
MARKERS_DIR = ".shards"
"""Under the root: one marker file per shard ever created (see the module docstring)."""
GENERATION_FILE = "GENERATION"
"""Per-tenant pointer to the live generation of its shards (strategy A's fresh start).

Absent: the shards are ``{root}/{tenant}/{layer}`` (every store before a reset). Present: it
names a directory ``{root}/{tenant}/gens/{name}`` holding ``{tenant}/{layer}`` shards (built by
an :class:`EdgeVectorStore` rooted there). It is written last and atomically (temp file, fsync,
rename), so a process killed at any moment leaves the old generation or the new one live.
"""
GENERATIONS_DIR = "gens"

SHARD_CONSTANT_KEYS: tuple[str, ...] = ("tenant_id", "layer")
"""Keys with one value per Edge shard (a shard is one tenant's layer): never indexed here."""

EDGE_INDEXED_KEYS: tuple[str, ...] = tuple(k for k in INDEXED_KEYS if k not in SHARD_CONSTANT_KEYS)
"""The keyword indexes of an Edge shard. An index costs on every upsert and flush (~0.4 ms and
~1.5 ms of CPU per batch of 128, about 3 ms of flush wall time, measured); the two keys that
are constant within a shard would never narrow a query, and no filter names them (the shard
already is the tenant's layer)."""

_PACKED_KEYS: tuple[str, ...] = ("meta",)
"""Payload keys whose nested object is stored as one JSON string, and decoded on read.

Edge converts a Python payload value by value, at ~5 µs per string, both ways: the NIKA_META
envelope alone (~15 strings) was ~85 µs of a point's ~165 µs upsert conversion and as much
per returned hit. No filter reads inside it (every filtered key is top-level,
``INDEXED_KEYS``), so one string loses nothing. A point written before (a dict) reads back
unchanged.
"""


def pack_payload(payload: Mapping[str, Any]) -> dict[str, Any]:
    packed = dict(payload)
    for key in _PACKED_KEYS:
        value = packed.get(key)
        if isinstance(value, dict | list):
            packed[key] = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return packed


def unpack_payload(payload: dict[str, Any]) -> dict[str, Any]:
    for key in _PACKED_KEYS:
        value = payload.get(key)
        if isinstance(value, str) and value[:1] in ("{", "["):
            # A plain string that happens to start with a brace is left as written.
            with contextlib.suppress(ValueError):
                payload[key] = json.loads(value)
    return payload


@contextmanager
def translated(action: str, where: str) -> Iterator[None]:
    """Turn qdrant_edge's errors into :class:`StoreUnavailable`.

    qdrant_edge raises plain ``Exception`` for everything (I/O, locks, bad input), so the
    blind catch is the only way to translate it; it stays confined to this helper.
    """
    try:
        yield
    except StoreUnavailable:
        raise
    except Exception as exc:  # qdrant_edge raises bare Exception; re-raised as ours
        text = str(exc)
        if "WouldBlock" in text or "failed to open WAL" in text:
            hint = (
                "another process has this store open; only the memory service opens it — "
                "reach memory through the service, or stop the other process (`nika down`)"
            )
        else:
            hint = f"check disk space and permissions under {where}, then run `nika doctor`"
        raise StoreUnavailable(f"qdrant edge {action} failed at {where}: {text}", hint) from exc
