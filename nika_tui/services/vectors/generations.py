"""Store generations: what a fresh start (strategy A) needs from a vector store.

A reset builds a tenant's new store aside, then makes it live in one atomic step, keeping the
old one. Each adapter does that its own way:

- Qdrant Edge (:class:`EdgeGenerations`): shards under ``{root}/{t}/gens/{name}`` and the
  pointer file ``{root}/{t}/GENERATION``, replaced atomically (decision 91);
- a Qdrant server (:class:`~.client_generations.ClientGenerations`): a collection per layer for
  the generation and one alias swap (decision 200).

:func:`generations_of` picks the one that fits a store.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from nika_tui.domain.ports import VectorStore
from nika_tui.paths import ensure_private_dir

if TYPE_CHECKING:
    from nika_tui.services.vectors.edge import EdgeVectorStore


class Generations(Protocol):
    """A store whose tenants can switch to a freshly built generation atomically."""

    kind: str
    """``edge`` or ``server``: where the generations live (shown in a reset's result)."""

    def live(self, tenant_id: str) -> str | None:
        """The live generation (``None``: the store as it was before any reset)."""
        ...

    def record(self, tenant_id: str) -> dict[str, Any]:
        """The live generation's record (``previous``, ``retired``, ``snapshot``…), or ``{}``."""
        ...

    def remove_unfinished(self, tenant_id: str) -> list[str]:
        """Remove generations a killed reset left half-built (never the live or a retired one).

        Returns:
            The names removed.
        """
        ...

    def build(self, tenant_id: str, name: str) -> Any:
        """A context manager yielding an empty :class:`VectorStore` for generation ``name``;
        on a clean exit its writes are durable."""
        ...

    def switch(self, tenant_id: str, name: str, record: Mapping[str, Any]) -> None:
        """Make ``name`` the tenant's live generation, in one atomic step; ``record`` is kept."""
        ...


class EdgeGenerations:
    """Generations of Qdrant Edge shards behind the per-tenant pointer file."""

    kind = "edge"

    def __init__(self, store: EdgeVectorStore) -> None:
        self.store = store

    def live(self, tenant_id: str) -> str | None:
        """The pointer's generation."""
        return self.store.generation(tenant_id)

    def record(self, tenant_id: str) -> dict[str, Any]:
        """The pointer file's JSON."""
        from nika_tui.services.vectors.edge_codec import GENERATION_FILE

        path = self.store.root / tenant_id / GENERATION_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def remove_unfinished(self, tenant_id: str) -> list[str]:
        """Directories under ``gens/`` that are neither live nor recorded as retired."""
        live = self.live(tenant_id)
        keep = set(self.record(tenant_id).get("retired", [])) | ({live} if live else set())
        gens = self.store.generation_root(tenant_id, "x").parent
        removed = []
        if gens.is_dir():
            for d in sorted(gens.iterdir()):
                if d.is_dir() and d.name not in keep:
                    shutil.rmtree(d)
                    removed.append(d.name)
        return removed

    @contextmanager
    def build(self, tenant_id: str, name: str) -> Iterator[VectorStore]:
        """An Edge store rooted at the generation's directory; flushed, then closed."""
        from nika_tui.services.vectors.edge import EdgeVectorStore

        root = ensure_private_dir(self.store.generation_root(tenant_id, name))
        built = EdgeVectorStore(root, self.store.dimension, flush_writes=False)
        try:
            yield built
            built.flush()
        finally:
            built.close()

    def switch(self, tenant_id: str, name: str, record: Mapping[str, Any]) -> None:
        """Replace the pointer file (the tenant's open shards are closed first)."""
        self.store.switch_generation(tenant_id, name, record)


def generations_of(store: VectorStore) -> Generations | None:
    """The generations of ``store``, or ``None`` when it cannot switch (an unknown adapter)."""
    from nika_tui.services.vectors.edge import EdgeVectorStore

    if isinstance(store, EdgeVectorStore):
        return EdgeGenerations(store)
    from nika_tui.services.vectors.client import ClientVectorStore

    if isinstance(store, ClientVectorStore):
        from nika_tui.services.vectors.client_generations import ClientGenerations

        return ClientGenerations(store)
    return None
