"""Plan an import, then queue it on the ingest stream with a resumable ledger.

Every file is read and turned into items before anything is queued, so a malformed file
adds nothing. Items of all files are queued in valid-time order (supersede then sees an older
fact before a newer one) in batches; each batch is one Redis transaction that XADDs the
requests *and* records their keys in the tenant's import ledger, so a kill at any moment
leaves the ledger exactly matching what was queued, and the next run queues only the rest.
A file whose items are all queued is recorded with its fingerprint: a later run skips it
without reading it while it is unchanged. The memory service ingests the stream as it does
any write (idempotent point ids, supersede, review queue).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from nika_tui.domain.envelope import NikaMeta, Trigger
from nika_tui.domain.memory import Layer
from nika_tui.domain.requests import RememberRequest
from nika_tui.errors import ServiceNotRunning, StoreUnavailable
from nika_tui.importer.discover import UNREADABLE_HINT, Policy, Unit, plan_unit
from nika_tui.importer.items import ImportItem, ImportSkip, by_time
from nika_tui.services import redis_keys

DEFAULT_BATCH = 200
Progress = Callable[[str, int, int], None]
"""``(phase, done, total)``: phase ``read`` (files) or ``queue`` (memories)."""


@dataclass
class ImportReport:
    """What an import did (or, with ``--dry-run``, would do)."""

    files: int = 0
    unchanged: int = 0
    sessions: int = 0
    documents: int = 0
    semantic: int = 0
    episodic: int = 0
    queued: int = 0
    already_queued: int = 0
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dry_run: bool = False

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dict(self.__dict__)


@dataclass
class Plan:
    """Items to queue, per file, and the files' fingerprints."""

    items: list[ImportItem] = field(default_factory=list)
    fingerprints: dict[str, str] = field(default_factory=dict)


def plan(
    r: redis.Redis,
    tenant_id: str,
    units: Sequence[Unit],
    policy: Policy,
    report: ImportReport,
    progress: Progress | None = None,
) -> Plan:
    """Read every unit (skipping unchanged, already imported files) into one plan."""
    done: dict[str, str] = r.hgetall(redis_keys.import_files(tenant_id))  # type: ignore[assignment]
    out = Plan()
    for n, unit in enumerate(units, start=1):
        if progress:
            progress("read", n, len(units))
        source = str(unit.path.resolve())
        try:
            fingerprint = unit.fingerprint()
        except OSError as exc:
            report.skipped.append(
                f"skipped {unit.path}: unreadable ({exc.strerror or exc}): {UNREADABLE_HINT}"
            )
            continue
        report.files += 1
        if done.get(source) == fingerprint:
            report.unchanged += 1
            continue
        try:
            items, notes, sessions = plan_unit(unit, policy)
        except ImportSkip as exc:
            report.skipped.append(f"skipped {unit.path}: {exc}")
            continue
        report.notes.extend(f"{unit.path}: {note}" for note in notes)
        if unit.kind in ("instruction", "doc"):
            report.documents += 1
        report.sessions += sessions
        report.semantic += sum(1 for i in items if i.layer is Layer.SEMANTIC)
        report.episodic += sum(1 for i in items if i.layer is Layer.EPISODIC)
        out.items.extend(items)
        out.fingerprints[source] = fingerprint
    out.items = by_time(out.items)
    return out


def request(tenant_id: str, item: ImportItem) -> RememberRequest:
    """The ingest request of one item: its real time as valid time, its source in NIKA_META."""
    meta = NikaMeta(
        session_id=item.session_id[:200],
        agent_type=item.agent,
        trigger=Trigger.SYSTEM,
        project_id=item.project_id,
        timestamp=item.at,
        source=item.source[-1000:],
    )
    return RememberRequest(
        tenant_id=tenant_id,
        text=item.text,
        layer=item.layer,
        meta=meta,
        valid_from=item.at,
        idempotency_key=item.key(tenant_id),
    )


def queue(
    r: redis.Redis,
    tenant_id: str,
    planned: Plan,
    report: ImportReport,
    batch: int = DEFAULT_BATCH,
    progress: Progress | None = None,
) -> str | None:
    """Queue what the ledger does not hold yet; returns the last stream id written (or None).

    Raises:
        StoreUnavailable: Redis failed (what was queued before is in the ledger).
    """
    keys_key, files_key = redis_keys.import_keys(tenant_id), redis_keys.import_files(tenant_id)
    keys = [item.key(tenant_id) for item in planned.items]
    try:
        held: list[bool] = []
        for start in range(0, len(keys), 1000):
            held += [bool(x) for x in r.smismember(keys_key, keys[start : start + 1000])]
        remaining: Counter[str] = Counter(
            item.ledger_file for item, h in zip(planned.items, held, strict=True) if not h
        )
        complete = {f: fp for f, fp in planned.fingerprints.items() if not remaining[f]}
        if complete:
            r.hset(files_key, mapping=complete)  # type: ignore[arg-type]
        todo = [(item, k) for item, k, h in zip(planned.items, keys, held, strict=True) if not h]
        report.already_queued = len(keys) - len(todo)
        last_id: str | None = None
        for start in range(0, len(todo), batch):
            part = todo[start : start + batch]
            pipe = r.pipeline(transaction=True)
            finished: dict[str, str] = {}
            for item, _key in part:
                pipe.xadd(
                    redis_keys.INGEST_STREAM, {"req": request(tenant_id, item).model_dump_json()}
                )
                remaining[item.ledger_file] -= 1
                if remaining[item.ledger_file] == 0:
                    finished[item.ledger_file] = planned.fingerprints[item.ledger_file]
            pipe.sadd(keys_key, *[k for _i, k in part])
            if finished:
                pipe.hset(files_key, mapping=finished)  # type: ignore[arg-type]
            results = pipe.execute()
            last_id = str(results[len(part) - 1])
            report.queued += len(part)
            if progress:
                progress("queue", report.queued, len(todo))
        return last_id
    except (redis.RedisError, OSError) as exc:
        raise StoreUnavailable(
            f"Redis failed while queueing the import ({exc})",
            "run `nika up`, then the same `nika import` again: it resumes where it stopped",
        ) from exc


def wait_ingested(
    r: redis.Redis, last_id: str, timeout: float, progress: Progress | None = None
) -> None:
    """Block until the service has acknowledged every entry up to ``last_id``.

    Raises:
        ServiceNotRunning: no service (the import stays queued and is ingested when one runs).
        StoreUnavailable: not done within ``timeout`` (it stays queued).
    """
    deadline = time.monotonic() + timeout
    target = tuple(int(x) for x in last_id.split("-"))
    while True:
        if not r.exists(redis_keys.SERVICE_HEARTBEAT):
            raise ServiceNotRunning(
                hint="start it with `nika up`: the import is queued and will be ingested then"
            )
        groups: list[dict[str, Any]] = r.xinfo_groups(redis_keys.INGEST_STREAM)
        group = next((g for g in groups if g["name"] == redis_keys.INGEST_GROUP), None)
        if group is not None:
            delivered = tuple(int(x) for x in str(group["last-delivered-id"]).split("-"))
            if delivered >= target and int(group["pending"]) == 0:
                return
        if time.monotonic() > deadline:
            raise StoreUnavailable(
                f"the import was queued but not ingested within {timeout:.0f}s",
                "it stays queued and will be ingested; follow it with `nika` (the dashboard)",
            )
        time.sleep(0.2)  # polling another process's progress: there is nothing to wait on
