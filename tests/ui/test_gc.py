"""IdleCollector: full collections only when due and nobody types (or when overdue)."""

from __future__ import annotations

import gc

from nika_tui.ui.gc import NO_AUTOMATIC_FULL, YOUNG_THRESHOLD, IdleCollector


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_install_takes_over_full_collections_and_uninstall_gives_them_back() -> None:
    before = gc.get_threshold()
    collector = IdleCollector()
    collector.install()
    try:
        assert gc.get_threshold() == (YOUNG_THRESHOLD, before[1], NO_AUTOMATIC_FULL)
    finally:
        collector.uninstall()
    assert gc.get_threshold() == before


def test_collects_when_due_and_quiet_never_right_after_input() -> None:
    clock = Clock()
    collector = IdleCollector(every_s=30, quiet_s=2, max_wait_s=300, clock=clock)
    clock.now += 10
    assert not collector.tick()  # not due yet
    clock.now += 25
    collector.input_seen()
    clock.now += 1
    assert not collector.tick()  # due, but a key was pressed a second ago
    clock.now += 2
    assert collector.tick()  # due and quiet
    assert collector.collections == 1
    assert not collector.tick()  # just ran


def test_an_overdue_collection_runs_even_while_someone_types() -> None:
    clock = Clock()
    collector = IdleCollector(every_s=30, quiet_s=2, max_wait_s=300, clock=clock)
    for _ in range(30):
        clock.now += 10
        collector.input_seen()
        if collector.tick():
            break
    assert collector.collections == 1
    assert clock.now - 1000.0 >= 300
