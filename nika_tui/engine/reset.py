"""Fresh start (strategy A, step 5): ``nika compress --tenant T --reset``.

Order, each stage recorded in the journal ``{data}/tenants/{t}/reset.json`` before it runs:

1. ``snapshot`` — the full snapshot (:mod:`.snapshot`) into ``{data}/tenants/{t}/snapshots/``;
2. ``compress`` — themes + digest into the knowledge trees, committed and pushed
   (:mod:`.compress`); a refused push or a bad repo stops here, the store untouched;
3. ``build`` — a new generation of the tenant's store is built aside (Edge shards under
   ``{qdrant}/{t}/gens/{name}``, or a server's collections ``nika_g_{t}_{name}_{layer}``):
   every kept memory re-ingested from the trees' ``.jsonl`` files (its text embedded again by
   the real embedder, its payload as stored) and one condensed memory per digest node;
4. ``switch`` — the generation becomes live in one atomic step (Edge: the pointer file; a
   server: one alias swap; :mod:`nika_tui.services.vectors.generations`). This is the only step
   that changes what is live: a ``kill -9`` before it leaves the old store live (the half-built
   generation is removed by the next reset), after it the new one. The old store is retired,
   never deleted (and it is in the snapshot).

Retired memories do not come back (only current ones are compressed); their supersede history
stays readable in the snapshot (``nika snapshot history``). Works on the embedded store (Qdrant
Edge) and on a Qdrant server (``QDRANT_URL``).
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nika_tui.domain import protocol_replies as rep
from nika_tui.domain import protocol_requests as req
from nika_tui.domain.envelope import ActionType, Domain, NikaMeta, Trigger
from nika_tui.domain.memory import (
    MAX_TEXT_CHARS,
    Layer,
    MemoryRecord,
    content_hash,
    memory_id,
)
from nika_tui.domain.ports import VectorPoint, VectorStore
from nika_tui.engine.compress import compress
from nika_tui.engine.context import EngineContext
from nika_tui.engine.publish import knowledge_repo, prepare_repo
from nika_tui.engine.snapshot.export import export_snapshot, remove_partial_exports
from nika_tui.engine.snapshot.restore import (
    HISTORY_SNAPSHOTS,
    open_snapshot,
    snapshot_dir,
    superseded_ids,
)
from nika_tui.errors import ResetUnavailable, SnapshotInvalid
from nika_tui.paths import Roots
from nika_tui.services import redis_keys
from nika_tui.services.files import atomic_write_text

if TYPE_CHECKING:  # qdrant is imported where it is used
    from nika_tui.services.vectors.generations import Generations

EMBED_BATCH = 128
DIGEST_LEVELS = frozenset({"strategy", "project", "job"})
DIGEST_MIN_MEMORIES = 3
"""A node's digest becomes a memory of the fresh store only at these levels and from this many
memories: below, the digest says little more than the memories it condenses."""
STAGES = ("started", "snapshot", "compress", "build", "switch", "done")
PAUSE_TTL_S = 6 * 3600
"""Bound on the writes-paused key of a reset killed before it could clear it (a reset at
50,000 memories takes 10 to 30 min on 2 cores; the service clears the key when it starts)."""


def journal_path(tenant_id: str, where: Roots) -> Path:
    """``{data}/tenants/{t}/reset.json``: the stage of the last (or running) reset."""
    return where.tenant_data_dir(tenant_id) / "reset.json"


def read_journal(tenant_id: str, where: Roots) -> dict[str, Any]:
    """The journal, or ``{}``."""
    try:
        data = json.loads(journal_path(tenant_id, where).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def reset_unfinished(ctx: EngineContext, tenant_id: str) -> bool:
    """True when the tenant's last reset did not reach ``done`` (killed, or failed): its
    entries were held on purpose, however often they were delivered."""
    stage = read_journal(tenant_id, ctx.settings.roots).get("stage")
    return stage is not None and stage != "done"


class _Journal:
    def __init__(
        self, path: Path, base: dict[str, Any], on_stage: Callable[[str], None] = lambda _: None
    ) -> None:
        self.path, self.data, self.on_stage = path, base, on_stage
        self.timings: dict[str, float] = {}
        self._last: tuple[str, float] | None = None

    def stage(self, name: str, **fields: Any) -> None:
        now = time.monotonic()
        if self._last is not None:
            self.timings[self._last[0]] = round(now - self._last[1], 3)
        self._last = (name, now)
        self.data.update(fields, stage=name, timings_s=self.timings)
        atomic_write_text(self.path, json.dumps(self.data, default=str, sort_keys=True) + "\n")
        self.on_stage(name)


def _pause_writes(ctx: EngineContext, tenant_id: str, since: str) -> Callable[[str], None]:
    """The journal's hook that says, in Redis, that this tenant's writes wait for its reset.

    In the service only that tenant's writes wait (``engine/server/resets.py``); the other
    tenants' are stored meanwhile. The dashboard and the CLI show it from this key.
    """

    def announce(stage: str) -> None:
        body = {"op": "compress.reset", "tenant_id": tenant_id, "stage": stage,
                "since": since, "pid": os.getpid(), "host": socket.gethostname()}  # fmt: skip
        ctx.redis.set(redis_keys.WRITES_PAUSED, json.dumps(body), ex=PAUSE_TTL_S)

    return announce


def _rows(files: Sequence[Path]) -> Iterator[dict[str, Any]]:
    for path in files:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)


def digest_record(tenant_id: str, row: Mapping[str, Any], at: Any) -> MemoryRecord:
    """One condensed memory for a digest node (episodic layer, ``kind: digest``)."""
    parts = [f"{row['level']} {row['node_id']}" + (f" — {row['title']}" if row["title"] else "")]
    for name in ("decided", "current", "open"):
        texts = [str(x["text"]) for x in row[name]]
        if texts:
            parts.append(f"{name}: " + "; ".join(texts))
    text = ". ".join(parts)[:MAX_TEXT_CHARS]
    scope = dict(row.get("scope") or {})
    meta = NikaMeta(
        trigger=Trigger.SYSTEM,
        timestamp=at,
        action_type=ActionType.DOC,
        domain=Domain.MEMORY,
        project_id=scope.get("project_id", ""),
        job_id=scope.get("job_id", ""),
        task_id=scope.get("task_id", ""),
        entity_ids=("digest", str(row["node_id"])),
    )
    key = f"digest:{row['node_id']}:{at.date().isoformat()}"
    return MemoryRecord(
        id=memory_id(tenant_id, key),
        tenant_id=tenant_id,
        layer=Layer.EPISODIC,
        text=text,
        meta=meta,
        valid_from=at,
        asserted_at=at,
        content_hash=content_hash(tenant_id, Layer.EPISODIC, text, meta.project_id),
    )


def _embedded(
    ctx: EngineContext, layer: Layer, items: list[tuple[str, dict[str, Any]]]
) -> list[VectorPoint]:
    vectors = ctx.embedder.embed([text for text, _ in items])
    return [
        VectorPoint(str(p["id"]), v, text, p) for (text, p), v in zip(items, vectors, strict=True)
    ]


def build_generation(
    ctx: EngineContext, tenant_id: str, store: VectorStore, themes: Sequence[Path],
    digests: Sequence[Path], earlier: tuple[str, Collection[str]] = ("", ()),
) -> dict[str, int]:  # fmt: skip
    """Fill ``store`` (a fresh generation, empty) from the trees; return points per layer.

    ``earlier``: the snapshot's id and the ids of the memories it holds older versions of
    (what some retired memory there was superseded by); each of these gets the snapshot's id
    appended to its ``history_snapshots``, which ``nika memory history`` / ``timeline`` name.
    """
    snapshot_id, replaced = earlier
    counts = {layer.value: 0 for layer in Layer}
    pending: dict[Layer, list[tuple[str, dict[str, Any]]]] = {layer: [] for layer in Layer}

    def flush(layer: Layer, force: bool = False) -> None:
        batch = pending[layer]
        if batch and (force or len(batch) >= EMBED_BATCH):
            store.upsert(tenant_id, layer, _embedded(ctx, layer, batch))
            counts[layer.value] += len(batch)
            pending[layer] = []

    for payload in _rows(themes):
        record = MemoryRecord.from_payload(payload)  # a damaged row fails the build, loudly
        if record.id in replaced:
            payload[HISTORY_SNAPSHOTS] = [*payload.get(HISTORY_SNAPSHOTS, []), snapshot_id]
        pending[record.layer].append((record.text, payload))
        flush(record.layer)
    at = ctx.clock()
    for row in _rows(digests):
        if row["level"] not in DIGEST_LEVELS or row["memory_count"] < DIGEST_MIN_MEMORIES:
            continue
        record = digest_record(tenant_id, row, at)
        payload = record.to_payload()
        payload.update(kind="digest", condenses=sorted(
            {i for name in ("decided", "current", "open") for x in row[name] for i in x["ids"]}
        ))  # fmt: skip
        pending[Layer.EPISODIC].append((record.text, payload))
        flush(Layer.EPISODIC)
    for layer in Layer:
        flush(layer, force=True)
    return counts


def _live_counts(ctx: EngineContext, tenant_id: str) -> int:
    return sum(ctx.vectors.count(tenant_id, layer) for layer in Layer)


OnWriter = Callable[[Callable[[], None]], None]
"""Runs a step in the store's single writer and returns once it ran (its error propagates)."""


def _here(step: Callable[[], None]) -> None:
    step()


def reset(
    ctx: EngineContext, tenant_id: str, repo: Path | None = None, on_writer: OnWriter = _here
) -> dict[str, Any]:
    """Snapshot, compress, publish, then switch the tenant to a fresh store built from the trees.

    Args:
        ctx: Engine context (a real embedder: the trees are embedded again).
        tenant_id: The tenant.
        repo: The knowledge repo's work tree (default: the tenant's ``knowledge_repo``).
        on_writer: Where the switch runs (flush and close the tenant's shards, replace the
            pointer): the caller's thread by default (the CLI, the single writer when the
            service is down); the service runs the other stages on a thread of their own and
            the switch on its loop, between two batches (``engine/server/resets.py``).

    Returns:
        Stages done, the snapshot, the commits, live points before and after, the generation.

    Raises:
        ResetUnavailable: the store has no generations (neither Qdrant Edge nor a server).
        ValidationFailed / PublishFailed / SnapshotInvalid: a step failed; nothing is switched.
    """
    config = ctx.tenant(tenant_id)
    from nika_tui.services.vectors.generations import generations_of

    gens = generations_of(ctx.vectors)
    if gens is None:
        raise ResetUnavailable(
            f"a fresh start cannot switch a {type(ctx.vectors).__name__} store",
            "use the embedded store (Qdrant Edge) or a Qdrant server (QDRANT_URL)",
        )
    # Bad input (no repo, a path that is not a git work tree, a URL that cannot be cloned) is
    # refused here, before the journal and the writes-paused mark: nothing paused, nothing kept.
    root = prepare_repo(*knowledge_repo(config, repo, ctx.settings.roots), ctx.child_env)
    now = ctx.clock()
    journal = _Journal(
        journal_path(tenant_id, ctx.settings.roots), {"tenant_id": tenant_id, "at": now},
        _pause_writes(ctx, tenant_id, now.isoformat()),
    )  # fmt: skip
    try:
        return _reset(ctx, tenant_id, root, gens, journal, now, on_writer)
    finally:
        ctx.redis.delete(redis_keys.WRITES_PAUSED)


def _reset(
    ctx: EngineContext, tenant_id: str, repo: Path, gens: Generations,
    journal: _Journal, now: datetime, on_writer: OnWriter,
) -> dict[str, Any]:  # fmt: skip
    stamp = now.strftime("%Y%m%dT%H%M%S%fZ")
    previous = gens.live(tenant_id)
    retired = set(gens.record(tenant_id).get("retired", []))
    journal.stage("started", previous=previous, store=gens.kind)
    removed = gens.remove_unfinished(tenant_id)
    snap_dir = snapshot_dir(ctx.settings.roots, tenant_id, stamp)
    partial = remove_partial_exports(snap_dir.parent)  # a reset killed during its snapshot
    before = _live_counts(ctx, tenant_id)
    journal.stage("snapshot", snapshot=str(snap_dir))
    snap = export_snapshot(ctx, tenant_id, snap_dir, {"reason": "compress --reset"})
    journal.stage("compress")
    compressed = compress(ctx, tenant_id, repo)
    themes = compressed.repo.ingest_files()
    if compressed.private is not None:
        themes += compressed.private.ingest_files()
    digests = [p for p in themes if p.parent.name == "digest"]
    themes = [p for p in themes if p.parent.name != "digest"]
    name = f"g{stamp}"
    journal.stage("build", generation=name)
    replaced = superseded_ids(snap_dir)
    with gens.build(tenant_id, name) as fresh:
        built = build_generation(ctx, tenant_id, fresh, themes, digests, (stamp, replaced))
    _check_backup(snap_dir, tenant_id, before)
    journal.stage("switch")
    on_writer(lambda: gens.switch(tenant_id, name, {
        "previous": previous, "retired": sorted(retired | {previous or "original"}),
        "snapshot": str(snap_dir), "switched_at": ctx.clock().isoformat(),
        "commit": compressed.repo.commit,
    }))  # fmt: skip
    after = _live_counts(ctx, tenant_id)
    result = {
        "tenant_id": tenant_id,
        "generation": name,
        "previous_generation": previous,
        "store": gens.kind,
        "snapshot": snap,
        "compress": compressed.to_dict(),
        "built": built,
        "live_points_before": before,
        "live_points_after": after,
        "removed_unfinished": removed,
        "removed_partial_snapshots": partial,
    }
    journal.stage("done", live_points_before=before, live_points_after=after)
    result["timings_s"] = dict(journal.timings)
    ctx.bus(tenant_id).append(
        "compress.reset",
        {k: result[k] for k in ("generation", "live_points_before", "live_points_after")}
        | {"snapshot": str(snap_dir), "commit": compressed.repo.commit},
        now=ctx.clock(),
    )
    return result


def _check_backup(root: Path, tenant_id: str, live: int) -> None:
    """The snapshot is what keeps the old store's knowledge once it is retired: read it back
    (checksums, tenant, every point) right before the switch, and stop there if it is damaged.

    Raises:
        SnapshotInvalid: a bad checksum, a missing file, or fewer points than the live store.
    """
    try:
        manifest = open_snapshot(root, tenant_id)
    except SnapshotInvalid as exc:
        raise SnapshotInvalid(
            exc.message, "the memory store is unchanged; check the disk, then run the reset again"
        ) from exc
    if manifest.total() != live:
        raise SnapshotInvalid(
            f"snapshot {root} holds {manifest.total()} points, the store {live}",
            "the memory store is unchanged; run the reset again (nothing may write meanwhile)",
        )


def compress_reset_op(ctx: EngineContext, r: req.CompressResetRequest) -> rep.CompressResetReply:
    return rep.CompressResetReply(reset(ctx, r.tenant_id, Path(r.repo) if r.repo else None))
