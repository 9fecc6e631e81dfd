"""What every engine operation needs: the stores, the embedder, the clock, per-tenant services.

The memory service builds one :class:`EngineContext` at start and passes it to ingest, recall,
supersede, review and every RPC op. Tests build one around a temp Qdrant Edge dir, the embedded
Redis and the real embedder.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import redis

from nika_tui.domain.ports import Embedder, Judge, VectorStore
from nika_tui.domain.tenant import TenantConfig
from nika_tui.domain.tenant_id import check_tenant_id
from nika_tui.services.bus import Bus, open_bus
from nika_tui.services.config_store import load_tenant
from nika_tui.services.hierarchy import Hierarchy, open_hierarchy
from nika_tui.settings import Settings

if TYPE_CHECKING:
    from nika_tui.domain.hierarchy import HierarchyNode


def utc_now() -> datetime:
    """The wall clock, timezone-aware (UTC)."""
    return datetime.now(UTC)


@dataclass
class EngineContext:
    """Services shared by the engine's operations (one per memory-service process)."""

    settings: Settings
    """The ``NIKA_*`` knobs and roots, built once by the process that built this context."""
    redis: redis.Redis
    vectors: VectorStore
    embedder: Embedder
    child_env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    """What the engine's children start from (git, kernels, the digest writer's agent CLI:
    ``PATH``, ``HOME``, their own variables); never where a setting is read."""
    secrets_env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    """Where the providers' keys are read when they are sent (a judge's or digest writer's key
    reference, the scale providers' credentials); never stored."""
    clock: Callable[[], datetime] = utc_now
    defer: Callable[[Callable[[Any], None]], None] | None = None
    """Where Redis writes the answer does not depend on go (a recall's query log): each is a
    function that queues its commands on a pipeline. A reader queues them on the pipeline
    that pushes its reply, after the reply (one round trip for both, decision 579);
    ``None``: they run at once on a pipeline of their own."""
    start_reset: Callable[[str, Callable[[Any], None]], None] | None = None
    """The service's reset beside the other tenants' writes (``engine/server/resets.py``):
    ``start_reset(tenant, done)`` holds the tenant, returns at once and calls ``done`` with the
    result (or the ``NikaError``) on the loop once it ended; ``None`` (the CLI): inline."""
    # Caches keyed by tenant: config by file mtime (a `nika setup` edit is picked up without a
    # restart), buses, hierarchies and judges for the life of the process.
    _configs: dict[str, tuple[float, TenantConfig]] = field(default_factory=dict, repr=False)
    _buses: dict[str, Bus] = field(default_factory=dict, repr=False)
    _hierarchies: dict[str, Hierarchy] = field(default_factory=dict, repr=False)
    _nodes: dict[str, tuple[float, list[HierarchyNode]]] = field(default_factory=dict, repr=False)
    _judges: dict[str, tuple[TenantConfig, Judge]] = field(default_factory=dict, repr=False)

    def after_reply(self, writes: Callable[[Any], None]) -> None:
        """Queue ``writes`` (given a Redis pipeline) behind the reply (see :attr:`defer`), or
        run them now."""
        if self.defer is None:
            pipe = self.redis.pipeline(transaction=False)
            writes(pipe)
            pipe.execute()
        else:
            self.defer(writes)

    def tenant(self, tenant_id: str) -> TenantConfig:
        """The tenant's config; raises ``TenantNotFound`` / ``ValidationFailed``."""
        check_tenant_id(tenant_id)
        path = self.settings.roots.tenant_config_path(tenant_id)
        try:
            mtime = path.stat().st_mtime
        except OSError:
            mtime = -1.0
        cached = self._configs.get(tenant_id)
        if cached is not None and cached[0] == mtime and mtime >= 0:
            return cached[1]
        config = load_tenant(tenant_id, self.settings.roots)
        self._configs[tenant_id] = (mtime, config)
        return config

    def bus(self, tenant_id: str) -> Bus:
        """The tenant's JSONL bus."""
        if tenant_id not in self._buses:
            self._buses[tenant_id] = open_bus(tenant_id, self.settings.roots)
        return self._buses[tenant_id]

    def hierarchy(self, tenant_id: str) -> Hierarchy:
        """The tenant's YAML hierarchy (source of truth for execution status)."""
        if tenant_id not in self._hierarchies:
            self._hierarchies[tenant_id] = open_hierarchy(tenant_id, self.settings.roots)
        return self._hierarchies[tenant_id]

    def hierarchy_nodes(self, tenant_id: str) -> list[HierarchyNode]:
        """Every hierarchy node, re-read only when the file changed (recall runs per query)."""
        h = self.hierarchy(tenant_id)
        try:
            mtime = h.path.stat().st_mtime
        except OSError:
            return []
        cached = self._nodes.get(tenant_id)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        nodes = h.all()
        self._nodes[tenant_id] = (mtime, nodes)
        return nodes

    def judge_for(self, tenant_id: str) -> Judge:
        """The judge the tenant configured (rules by default)."""
        from nika_tui.services.judges.factory import judge_for

        config = self.tenant(tenant_id)
        cached = self._judges.get(tenant_id)
        if cached is not None and cached[0] == config:
            return cached[1]
        judge = judge_for(
            config,
            self.settings.roots,
            self.secrets_env,
            path=self.child_env.get("PATH"),
            embedder=self.embedder,
        )
        self._judges[tenant_id] = (config, judge)
        return judge
