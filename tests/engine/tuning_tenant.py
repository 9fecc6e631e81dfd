"""Constructed tuning tenants: memories at exact cosines to their queries (real stores).

The query vectors come from a table embedder (a real :class:`Embedder` whose vectors we chose):
so "which parameter value is better" is known exactly, not guessed from a model.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from nika_tui.domain.recall_params import Judged
from nika_tui.domain.tenant import AutoMode
from nika_tui.engine.context import EngineContext
from nika_tui.services.config_store import load_tenant, save_tenant
from tests.plugins.debt import at_cosine, make_record, put, unit


class TableEmbedder:
    """Embeds the queries of the constructed set with the vectors they were built around."""

    dimension = 384
    name = "table"

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.table[t] for t in texts]


def constructed_tenant(ctx: EngineContext, relevant_cos: float, n: int = 16) -> list[Judged]:
    """n answerable queries (their memory at ``relevant_cos``) and n with nothing relevant."""
    rng = random.Random(7)
    table: dict[str, list[float]] = {}
    records = []
    labels: list[Judged] = []
    for i in range(n):
        q = unit(rng)
        table[f"question {i}"] = q
        rec = make_record("acme", f"fact number {i}")
        records.append((rec, at_cosine(q, relevant_cos, rng)))
        labels.append(Judged(query=f"question {i}", useful=frozenset({rec.id})))
    for i in range(n):
        q = unit(rng)
        table[f"unknown {i}"] = q
        records.append((make_record("acme", f"noise number {i}"), at_cosine(q, 0.12, rng)))
        labels.append(Judged(query=f"unknown {i}", expect_none=True))
    put(ctx, records)
    ctx.embedder = TableEmbedder(table)
    return labels


def set_tune_mode(mode: AutoMode, tenant_id: str = "acme") -> None:
    """Set the tenant's ``auto_actions.tune``."""
    config = load_tenant(tenant_id)
    actions = config.auto_actions.model_copy(update={"tune": mode})
    save_tenant(config.model_copy(update={"auto_actions": actions}))


NOISY_COS = 0.45
"""Cosine of the disputed hits: above the default floor (0.40), under the search's top (0.60)."""


def noisy_tenant(
    ctx: EngineContext, clean: int = 8, marked_none: int = 7, marked_useful: int = 3
) -> list[Judged]:
    """A tenant whose labels disagree: the floor can only trade one group for the other.

    ``clean`` answerable queries (their memory at 0.80) and ``clean`` unanswerable ones
    (nearest at 0.12) score 1 under any floor searched. Then hits that look alike — each query's
    memory at :data:`NOISY_COS` — were marked "no memory answers this" for ``marked_none``
    queries and useful for ``marked_useful`` others. Under the default floor the first group
    scores 0 and the second 1; a floor above :data:`NOISY_COS` swaps them: a gain of
    ``(marked_none - marked_useful) / n`` carried by a few queries moving both ways.
    """
    rng = random.Random(11)
    table: dict[str, list[float]] = {}
    records = []
    labels: list[Judged] = []

    def query(name: str, cos: float, *, useful: bool, none: bool) -> None:
        q = unit(rng)
        table[name] = q
        rec = make_record("acme", f"memory for {name}")
        records.append((rec, at_cosine(q, cos, rng)))
        ids = frozenset({rec.id}) if useful else frozenset()
        labels.append(Judged(query=name, useful=ids, expect_none=none))

    for i in range(clean):
        query(f"clear question {i}", 0.80, useful=True, none=False)
        query(f"clear unknown {i}", 0.12, useful=False, none=True)
    for i in range(marked_none):
        query(f"disputed none {i}", NOISY_COS, useful=False, none=True)
    for i in range(marked_useful):
        query(f"disputed useful {i}", NOISY_COS, useful=True, none=False)
    put(ctx, records)
    ctx.embedder = TableEmbedder(table)
    return labels
