"""JSONL bus: durable appends with NIKA_META, rotation, unreadable lines kept raw."""

from __future__ import annotations

import os
import stat
import threading
from datetime import UTC, date, datetime

import pytest

from nika_tui.domain.envelope import ActionType, NikaMeta, Trigger
from nika_tui.services.bus import Bus, open_bus

NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)


def test_append_writes_one_line_with_envelope_and_private_mode() -> None:
    bus = open_bus("acme")
    meta = NikaMeta(timestamp=NOW, trigger=Trigger.HOOK, action_type=ActionType.CODE)
    msg = bus.append("memory.ingested", {"id": "m1"}, meta=meta, now=NOW)
    lines = list(bus.read())
    assert [line.data for line in lines] == [msg]
    assert lines[0].data is not None
    assert lines[0].data["NIKA_META"]["action_type"] == "code"
    assert lines[0].data["tenant_id"] == "acme"
    path = bus.files()[0]
    assert path.name == "2026-12-02.jsonl"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_every_message_gets_an_envelope_even_without_one() -> None:
    bus = open_bus("acme")
    bus.append("debt.audit", {"x": 1}, now=NOW)
    data = next(iter(bus.read())).data
    assert data is not None
    assert data["NIKA_META"]["trigger"] == "system"


def test_rotation_by_size_keeps_every_line_in_order(tmp_path: object) -> None:
    bus = open_bus("acme")
    bus.max_bytes = 2000
    for i in range(40):
        bus.append("kernel.event", {"i": i, "pad": "x" * 50}, now=NOW)
    files = bus.files(date(2026, 12, 2))
    assert len(files) > 1
    assert all(p.stat().st_size <= 2000 for p in files)
    got = [line.data["body"]["i"] for line in bus.read() if line.data]
    assert got == list(range(40))
    assert bus.bytes_on(date(2026, 12, 2)) == sum(p.stat().st_size for p in files)


def test_unreadable_line_is_kept_raw() -> None:
    bus = open_bus("acme")
    bus.append("a", {}, now=NOW)
    with bus.files()[0].open("a") as fh:
        fh.write("{not json\n")
    bus.append("b", {}, now=NOW)
    lines = list(bus.read())
    assert [line.data is None for line in lines] == [False, True, False]
    assert lines[1].raw == "{not json"


def test_concurrent_appends_lose_nothing() -> None:
    bus: Bus = open_bus("acme")

    def writer(k: int) -> None:
        for i in range(50):
            bus.append("w", {"k": k, "i": i}, now=NOW)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bodies = {(line.data["body"]["k"], line.data["body"]["i"]) for line in bus.read() if line.data}
    assert len(bodies) == 200


def test_append_many_writes_a_batch_in_order_with_one_fsync_per_day_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bus = open_bus("acme")
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    next_day = datetime(2026, 12, 3, 0, 5, tzinfo=UTC)
    items = [("memory.ingested", {"i": i}, None, NOW) for i in range(5)]
    items.append(("memory.ingested", {"i": 5}, None, next_day))
    messages = bus.append_many(items)
    assert [m["body"]["i"] for m in messages] == list(range(6))
    assert [line.data["body"]["i"] for line in bus.read(date(2026, 12, 2)) if line.data] == [
        0,
        1,
        2,
        3,
        4,
    ]
    assert [line.data for line in bus.read(date(2026, 12, 3))] == [messages[5]]
    assert len(synced) == 2  # one per day file, not one per message
