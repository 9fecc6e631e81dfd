"""Full, restorable snapshots of a tenant's memory (strategy A, step 1; ``docs/snapshot.md``).

RPC ops ``snapshot.export`` and ``snapshot.import`` run them inside the memory service, the
single writer; the CLI runs the same functions on its own when the service is down.
"""

from __future__ import annotations

from pathlib import Path

from nika_tui.domain import protocol_replies as rep
from nika_tui.domain import protocol_requests as req
from nika_tui.engine.context import EngineContext
from nika_tui.engine.snapshot.export import export_snapshot
from nika_tui.engine.snapshot.restore import import_snapshot

__all__ = ["export_snapshot", "import_snapshot"]


def snapshot_export_op(ctx: EngineContext, r: req.SnapshotExportRequest) -> rep.SnapshotExportReply:
    return rep.SnapshotExportReply(export_snapshot(ctx, r.tenant_id, Path(r.path)))


def snapshot_import_op(ctx: EngineContext, r: req.SnapshotImportRequest) -> rep.SnapshotImportReply:
    loaded = import_snapshot(ctx, r.tenant_id, Path(r.path), force=bool(r.force))
    return rep.SnapshotImportReply(loaded)
