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
