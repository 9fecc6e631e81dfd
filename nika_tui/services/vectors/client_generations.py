"""Store generations on a Qdrant server: a collection per layer, switched by one alias swap.

Before any reset a tenant's points are in the shared collections (``nika_semantic``,
``nika_episodic``). A fresh start builds ``{prefix}g_{tenant}_{generation}_{layer}`` (same
vectors and indexes as the shared ones), then one ``update_collection_aliases`` request points
``{prefix}t_{tenant}_{layer}`` at them, both layers at once. Qdrant applies the actions of one
request atomically, so a process killed at any moment leaves the old store or the new one live
(decision 200). From then on :class:`~.client.ClientVectorStore` routes that tenant's calls
through its aliases.

Nothing is deleted: the tenant's points in the shared collections and any earlier generation
stay (retired), and the generation's record (``previous``, ``retired``, ``snapshot``…) is
kept in its collections' metadata, written before the swap.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from qdrant_client import models

from nika_tui.domain.memory import Layer
from nika_tui.errors import StoreUnavailable
from nika_tui.services.vectors.client import ClientVectorStore, _translated
from nika_tui.services.vectors.common import check_tenant


class ClientGenerations:
    """Generations of a tenant's collections on a Qdrant server (see the module docstring)."""

    kind = "server"

    def __init__(self, store: ClientVectorStore) -> None:
        self.store = store

    def _head(self, tenant_id: str) -> str:
        return f"{self.store.prefix}g_{check_tenant(tenant_id)}_"

    def collection(self, tenant_id: str, name: str, layer: Layer) -> str:
        """The collection of generation ``name``'s ``layer``."""
        return f"{self._head(tenant_id)}{name}_{layer.value}"

    def _aliases(self) -> dict[str, str]:
        with _translated("list aliases", self.store.prefix + "*"):
            found = self.store.client.get_aliases().aliases
        return {a.alias_name: a.collection_name for a in found}

    def live(self, tenant_id: str) -> str | None:
        """The generation the tenant's semantic alias points at (``None``: shared collections)."""
        target = self._aliases().get(self.store.tenant_alias(tenant_id, Layer.SEMANTIC))
        head, tail = self._head(tenant_id), f"_{Layer.SEMANTIC.value}"
        if target is None or not (target.startswith(head) and target.endswith(tail)):
            return None
        return target[len(head) : -len(tail)]

    def record(self, tenant_id: str) -> dict[str, Any]:
        """The live generation's record, from its semantic collection's metadata."""
        live = self.live(tenant_id)
        if live is None:
            return {}
        name = self.collection(tenant_id, live, Layer.SEMANTIC)
        with _translated("read metadata", name):
            metadata = self.store.client.get_collection(name).config.metadata
        return dict(metadata or {})

    def remove_unfinished(self, tenant_id: str) -> list[str]:
        """Delete the tenant's generation collections that are neither live nor retired."""
        live = self.live(tenant_id)
        keep = set(self.record(tenant_id).get("retired", [])) | ({live} if live else set())
        head = self._head(tenant_id)
        with _translated("list collections", head + "*"):
            names = [c.name for c in self.store.client.get_collections().collections]
        removed: set[str] = set()
        for name in sorted(names):
            if not name.startswith(head):
                continue
            generation = name[len(head) :].rsplit("_", 1)[0]
            if generation not in keep:
                with _translated("delete", name):
                    self.store.client.delete_collection(name)
                removed.add(generation)
        return sorted(removed)

    @contextmanager
    def build(self, tenant_id: str, name: str) -> Iterator[ClientVectorStore]:
        """A view on the same client pinned to the generation's collections (created now,
        both layers, so the swap has targets even for an empty layer). Writes are applied by
        the server when they return (``wait=True``)."""
        pinned = {layer: self.collection(tenant_id, name, layer) for layer in Layer}
        view = ClientVectorStore(
            self.store.client, self.store.dimension, prefix=self.store.prefix, pinned=pinned
        )
        view.ensure_collections(tenant_id)
        yield view

    def switch(self, tenant_id: str, name: str, record: Mapping[str, Any]) -> None:
        """Write the record into the generation's metadata, then swap both aliases in one request.

        Raises:
            StoreUnavailable: the generation has no collection, or the server refused.
        """
        client = self.store.client
        targets = {layer: self.collection(tenant_id, name, layer) for layer in Layer}
        for layer, target in targets.items():
            with _translated("switch", target):
                if not client.collection_exists(target):
                    raise StoreUnavailable(
                        f"generation {name} of tenant {tenant_id} has no {layer.value} collection",
                        "rebuild it (run the reset again); the live store is unchanged",
                    )
                client.update_collection(target, metadata={**record, "generation": name})
        existing = self._aliases()
        actions: list[models.CreateAliasOperation | models.DeleteAliasOperation] = []
        for layer, target in targets.items():
            alias = self.store.tenant_alias(tenant_id, layer)
            if alias in existing:
                actions.append(
                    models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias))
                )
            actions.append(
                models.CreateAliasOperation(
                    create_alias=models.CreateAlias(collection_name=target, alias_name=alias)
                )
            )
        with _translated("switch", self.store.tenant_alias(tenant_id, "semantic")):
            client.update_collection_aliases(actions)
        self.store.refresh_aliases()
