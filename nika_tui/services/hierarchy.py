"""YAML hierarchy per tenant, with file-locked read-modify-write (the source of truth).

File: ``{data}/tenants/{tenant_id}/hierarchy.yaml`` (0600). Every write takes an exclusive
``filelock`` on a sibling lock file, re-reads, changes, and replaces the file atomically, so
concurrent writers (hooks, the service, the CLI) never lose each other's updates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

import yaml
from filelock import FileLock, Timeout
from pydantic import ValidationError

from nika_tui.domain.hierarchy import HierarchyNode, NodeStatus, check_parent
from nika_tui.domain.tenant_id import check_tenant_id
from nika_tui.errors import ConfigError, StoreUnavailable, ValidationFailed
from nika_tui.paths import Roots, roots
from nika_tui.services.files import atomic_write_text


class Hierarchy:
    """One tenant's hierarchy file."""

    def __init__(self, path: Path, lock_timeout: float = 10.0) -> None:
        self.path = path
        self._lock = FileLock(str(path) + ".lock", timeout=lock_timeout)

    def _read(self) -> dict[str, HierarchyNode]:
        if not self.path.exists():
            return {}
        try:
            raw = yaml.safe_load(self.path.read_text(encoding="utf-8")) or {}
            nodes = raw.get("nodes", []) if isinstance(raw, dict) else None
            if not isinstance(nodes, list):
                raise ValueError("expected a 'nodes' list")
            parsed = [HierarchyNode.model_validate(n) for n in nodes]
        except (yaml.YAMLError, ValueError, ValidationError) as exc:
            raise ConfigError(
                f"{self.path}: unreadable hierarchy ({exc.__class__.__name__})",
                "fix the file by hand; nika-os will not overwrite it",
            ) from exc
        return {n.id: n for n in parsed}

    def _write(self, nodes: Mapping[str, HierarchyNode]) -> None:
        data = {"nodes": [n.model_dump(mode="json") for n in nodes.values()]}
        atomic_write_text(self.path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))

    def _locked(self) -> FileLock:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        return self._lock

    def all(self) -> list[HierarchyNode]:
        """Every node, in file order."""
        return list(self._read().values())

    def get(self, node_id: str) -> HierarchyNode | None:
        """One node by id."""
        return self._read().get(node_id)

    def children(self, node_id: str) -> list[HierarchyNode]:
        """Direct children of ``node_id``."""
        return [n for n in self._read().values() if n.parent_id == node_id]

    def upsert(self, node: HierarchyNode) -> None:
        """Insert or replace a node; its parent must exist and sit above it."""
        try:
            with self._locked():
                nodes = self._read()
                problem = check_parent(node, nodes.get(node.parent_id or ""))
                if problem:
                    raise ValidationFailed(f"hierarchy: {problem}", "create the parent first")
                nodes[node.id] = node
                self._write(nodes)
        except Timeout as exc:
            raise StoreUnavailable(f"{self.path} is locked", "retry in a moment") from exc

    def upsert_many(self, new: Sequence[HierarchyNode]) -> None:
        """Insert or replace many nodes with one read and one write (parents before children).

        The file is rewritten whole on every write, so a tree of thousands of nodes upserted
        one by one is quadratic (minutes at 5,000 nodes); this is linear.

        Raises:
            ValidationFailed: a node's parent is missing or not above it; nothing is written.
        """
        try:
            with self._locked():
                nodes = self._read()
                for node in new:
                    problem = check_parent(node, nodes.get(node.parent_id or ""))
                    if problem:
                        raise ValidationFailed(
                            f"hierarchy: {problem}", "create the parent first; nothing was written"
                        )
                    nodes[node.id] = node
                self._write(nodes)
        except Timeout as exc:
            raise StoreUnavailable(f"{self.path} is locked", "retry in a moment") from exc

    def set_status(self, node_id: str, status: NodeStatus, now: datetime) -> HierarchyNode:
        """Change one node's status and return it."""
        try:
            with self._locked():
                nodes = self._read()
                if node_id not in nodes:
                    raise ValidationFailed(f"hierarchy: no node {node_id!r}", "check the id")
                node = nodes[node_id].model_copy(update={"status": status, "updated_at": now})
                nodes[node_id] = node
                self._write(nodes)
                return node
        except Timeout as exc:
            raise StoreUnavailable(f"{self.path} is locked", "retry in a moment") from exc


def open_hierarchy(tenant_id: str, where: Roots | None = None) -> Hierarchy:
    """The hierarchy of one tenant (under ``where``; None: the roots of ``os.environ``)."""
    at = where or roots()
    return Hierarchy(at.tenant_data_dir(check_tenant_id(tenant_id)) / "hierarchy.yaml")
