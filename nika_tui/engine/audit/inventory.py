"""One scroll of a tenant's points (counts, a uniform sample, recent retirements) and the
duplicate check on the sample (Qdrant neighbour searches).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from nika_tui.domain import debt_tables
from nika_tui.domain.iso_time import parse_iso_utc
from nika_tui.domain.memory import Layer, Status
from nika_tui.domain.ports import PointFilter, VectorStore

JUDGE_SAMPLE = 50
RETIRED_KEPT = 4 * JUDGE_SAMPLE


@dataclass
class Inventory:
    """What one scroll of a tenant's points found."""

    total: int = 0
    current: int = 0
    retired: int = 0
    asserted_24h: int = 0
    sample: list[tuple[Layer, str]] = field(default_factory=list)
    per_layer: dict[str, dict[str, int]] = field(default_factory=dict)
    recent_retired: list[tuple[float, str, Mapping[str, Any]]] = field(default_factory=list)
    """Min-heap of the most recently retired payloads (retired_at, id, payload)."""

    def retired_payloads(self) -> list[Mapping[str, Any]]:
        """Recently retired payloads, newest first."""
        return [p for _, _, p in sorted(self.recent_retired, key=lambda x: x[0], reverse=True)]


def parse_ts(value: Any) -> float | None:
    """Epoch seconds of an ISO-8601 payload field (None: missing or malformed)."""
    ts = parse_iso_utc(value)
    return None if ts is None else ts.timestamp()


def inventory(
    vectors: VectorStore, tenant_id: str, now: datetime, sample_size: int, rng: random.Random
) -> Inventory:
    """One pass over the tenant's points: counts, 24-hour additions, a uniform sample.

    The sample of *current* points is drawn by reservoir sampling (algorithm R) during the
    scroll, so it is uniform over both layers without a second pass.

    Args:
        vectors: The store.
        tenant_id: The tenant.
        now: Audit time.
        sample_size: Reservoir size.
        rng: Seeded random source.

    Returns:
        The inventory.
    """
    inv = Inventory()
    since = (now - timedelta(days=1)).timestamp()
    seen_current = 0
    for layer in Layer:
        counts = {"total": 0, "current": 0, "retired": 0}
        for p in vectors.scroll(tenant_id, layer, batch=2048):
            counts["total"] += 1
            asserted = parse_ts(p.payload.get("asserted_at"))
            if asserted is not None and asserted >= since:
                inv.asserted_24h += 1
            if p.payload.get("status") != Status.CURRENT.value:
                counts["retired"] += 1
                if p.payload.get("superseded_by"):
                    retired_at = parse_ts(p.payload.get("retired_at")) or 0.0
                    item = (retired_at, p.id, p.payload)
                    if len(inv.recent_retired) < RETIRED_KEPT:
                        heapq.heappush(inv.recent_retired, item)
                    elif retired_at > inv.recent_retired[0][0]:
                        heapq.heapreplace(inv.recent_retired, item)
                continue
            counts["current"] += 1
            seen_current += 1
            if len(inv.sample) < sample_size:
                inv.sample.append((layer, p.id))
            else:
                j = rng.randrange(seen_current)
                if j < sample_size:
                    inv.sample[j] = (layer, p.id)
        inv.per_layer[layer.value] = counts
        inv.total += counts["total"]
        inv.current += counts["current"]
        inv.retired += counts["retired"]
    return inv


def duplicate_flags(
    vectors: VectorStore, tenant_id: str, sample: Sequence[tuple[Layer, str]]
) -> list[bool]:
    """For each sampled point: does its nearest other current point have cosine > 0.95?

    Uses Qdrant's own neighbour search (top-2 within tenant, layer and ``status=current``:
    the first hit is usually the point itself).

    Args:
        vectors: The store.
        tenant_id: The tenant.
        sample: ``(layer, id)`` of sampled current points.

    Returns:
        One flag per sampled point still present (points purged meanwhile are skipped).
    """
    flags: list[bool] = []
    current = PointFilter(equals={"status": Status.CURRENT.value})
    for layer in Layer:
        ids = [pid for lay, pid in sample if lay is layer]
        for start in range(0, len(ids), 256):
            for point in vectors.retrieve(
                tenant_id, layer, ids[start : start + 256], with_vectors=True
            ):
                if point.vector is None:
                    continue
                hits = vectors.search_dense(tenant_id, layer, point.vector, flt=current, limit=2)
                other = next((h for h in hits if h.id != point.id), None)
                flags.append(other is not None and other.score > debt_tables.DUPLICATE_COSINE)
    return flags
