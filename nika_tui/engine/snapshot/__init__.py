"""Full, restorable snapshots of a tenant's memory (strategy A, step 1; ``docs/snapshot.md``).

RPC ops ``snapshot.export`` and ``snapshot.import`` run them inside the memory service, the
single writer; the CLI runs the same functions on its own when the service is down.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nika_tui.engine.context import EngineContext
from nika_tui.engine.snapshot.export import export_snapshot
from nika_tui.engine.snapshot.restore import import_snapshot
from nika_tui.errors import ValidationFailed

__all__ = ["export_snapshot", "import_snapshot"]


def _args(body: dict[str, Any]) -> tuple[str, Path]:
    tenant_id, path = body.get("tenant_id"), body.get("path")
    if not isinstance(tenant_id, str) or not isinstance(path, str) or not path:
        raise ValidationFailed("a snapshot needs 'tenant_id' and 'path'", "pass --tenant and PATH")
    if not Path(path).is_absolute():
        raise ValidationFailed(f"snapshot path {path!r} is not absolute", "pass an absolute path")
    return tenant_id, Path(path)


def snapshot_export_op(ctx: EngineContext, body: dict[str, Any]) -> dict[str, Any]:
    tenant_id, path = _args(body)
    return export_snapshot(ctx, tenant_id, path)


def snapshot_import_op(ctx: EngineContext, body: dict[str, Any]) -> dict[str, Any]:
    tenant_id, path = _args(body)
    return import_snapshot(ctx, tenant_id, path, force=bool(body.get("force", False)))
