"""When the service syncs auto-memory: the debounce on a fake clock, and REM's end as a trigger
through the running service (real embedder, Redis, Qdrant Edge)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest

from nika_tui.automemory.claude_sync import memory_dir
from nika_tui.automemory.runner import (
    DEBOUNCE_S,
    MAX_DELAY_S,
    AutoMemoryScheduler,
    claude_project_root,
)
from nika_tui.domain.protocol_requests import MemoryRetireRequest, RemRunRequest
from nika_tui.domain.tenant import KernelConfig, TenantConfig
from nika_tui.errors import StoreUnavailable
from nika_tui.services.config_store import save_tenant
from tests.helpers import retry_until
from tests.plugins.debt import make_record, put
from tests.plugins.memory import RunningService


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Schedule(NamedTuple):
    test_id: str
    writes: tuple[float, ...]
    """Seconds (from the start) at which the tenant is written to."""
    ticks: tuple[float, ...]
    """Seconds at which the service loop ticks."""
    synced_at: tuple[float, ...]
    """The ticks at which a sync runs."""


SCHEDULES = [
    Schedule("one-write-waits-for-quiet", (0.0,), (DEBOUNCE_S - 0.1, DEBOUNCE_S, DEBOUNCE_S + 1),
             (DEBOUNCE_S,)),
    Schedule("a-burst-is-one-sync", (0.0, 1.0, 2.0, 3.0), (2.5, 3.0 + DEBOUNCE_S - 0.1,
             3.0 + DEBOUNCE_S, 20.0), (3.0 + DEBOUNCE_S,)),
    # Writes every 4 s never leave 5 s of quiet: the 60 s cap syncs anyway.
    Schedule("steady-writes-capped", tuple(4.0 * i for i in range(20)),
             (MAX_DELAY_S - 1, MAX_DELAY_S, MAX_DELAY_S + 1), (MAX_DELAY_S,)),
    Schedule("no-write-no-sync", (), (DEBOUNCE_S, MAX_DELAY_S), ()),
]  # fmt: skip


@pytest.mark.parametrize("case", SCHEDULES, ids=[c.test_id for c in SCHEDULES])
def test_debounce(case: Schedule) -> None:
    clock = FakeClock()
    start = clock.now
    synced: list[float] = []
    sched = AutoMemoryScheduler(lambda _t: synced.append(clock.now - start), clock)
    events = sorted([(t, "write") for t in case.writes] + [(t, "tick") for t in case.ticks])
    ticked: list[float] = []
    for at, kind in events:
        clock.now = start + at
        if kind == "write":
            sched.touch(["acme"])
        elif sched.tick():
            ticked.append(at)
    assert synced == list(case.synced_at)
    assert ticked == list(case.synced_at)


def test_a_syncs_own_imports_do_not_schedule_another() -> None:
    clock = FakeClock()
    sched: AutoMemoryScheduler

    def sync(tenant_id: str) -> None:
        sched.touch([tenant_id])  # the imports' ingest marks the tenant as written to

    sched = AutoMemoryScheduler(sync, clock)
    sched.touch(["acme"])
    clock.now += DEBOUNCE_S
    assert sched.tick() == ["acme"]
    clock.now += MAX_DELAY_S
    assert sched.tick() == []


def test_a_failed_sync_is_logged_and_the_others_still_run(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()

    def sync(tenant_id: str) -> None:
        if tenant_id == "broken":
            raise StoreUnavailable("Qdrant Edge is gone", "restart")

    sched = AutoMemoryScheduler(sync, clock)
    sched.touch(["broken", "acme"])
    clock.now += DEBOUNCE_S
    assert sched.tick() == ["acme"]
    assert "auto-memory sync of broken failed: Qdrant Edge is gone" in caplog.text


@pytest.mark.embedder
def test_the_end_of_a_rem_pass_syncs_the_tenant(
    running_service: RunningService, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    save_tenant(
        TenantConfig(tenant_id="acme", display_name="Acme", kernel=KernelConfig(workdir=str(work)))
    )
    # Stored without ingest: only REM's end can make the service sync this tenant.
    text = "The acme release train leaves every second Tuesday from the main branch"
    rec = make_record("acme", text, entity_ids=("automemory:project",))
    put(running_service.ctx, [(rec, running_service.ctx.embedder.embed([text])[0])])
    index = memory_dir("acme", claude_project_root(work)) / "MEMORY.md"
    assert not index.exists()
    running_service.client.send(RemRunRequest("acme", ["obsolete"], True), timeout=120)
    synced = retry_until(
        lambda: index.read_text() if index.exists() else None,
        timeout=60,
        what="MEMORY.md written by the sync that follows the REM pass",
    )
    assert "release train" in synced


@pytest.mark.embedder
def test_a_retirement_through_the_service_syncs_the_tenant(
    running_service: RunningService, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    save_tenant(
        TenantConfig(tenant_id="acme", display_name="Acme", kernel=KernelConfig(workdir=str(work)))
    )
    # Stored without ingest: only the retirement can make the service sync this tenant.
    kept = "The acme release train leaves every second Tuesday from the main branch"
    gone = "The acme release train leaves every Friday from the release branch"
    records = [make_record("acme", t, entity_ids=("automemory:project",)) for t in (kept, gone)]
    embed = running_service.ctx.embedder.embed
    put(running_service.ctx, [(r, embed([r.text])[0]) for r in records])
    index = memory_dir("acme", claude_project_root(work)) / "MEMORY.md"
    assert not index.exists()
    running_service.client.send(MemoryRetireRequest("acme", records[1].id, "moved"), timeout=60)
    synced = retry_until(
        lambda: index.read_text() if index.exists() else None,
        timeout=60,
        what="MEMORY.md written by the sync that follows the retirement",
    )
    assert "second Tuesday" in synced and "every Friday" not in synced
