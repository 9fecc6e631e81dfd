"""YAML hierarchy: parent rules, status changes, locked concurrent writes, bad files kept."""

from __future__ import annotations

import stat
import threading
from datetime import UTC, datetime

import pytest

from nika_tui.domain.hierarchy import HierarchyNode, Level, NodeStatus
from nika_tui.errors import ConfigError, ValidationFailed
from nika_tui.services.hierarchy import open_hierarchy

NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)


def _node(node_id: str, level: Level, parent: str | None = None) -> HierarchyNode:
    return HierarchyNode(id=node_id, level=level, parent_id=parent, updated_at=NOW)


def test_tree_and_status() -> None:
    h = open_hierarchy("acme")
    h.upsert(_node("PROJ-CORE", Level.PROJECT))
    h.upsert(_node("JOB-HOOKS", Level.JOB, "PROJ-CORE"))
    h.upsert(_node("TASK-1", Level.TASK, "JOB-HOOKS"))
    assert [n.id for n in h.children("JOB-HOOKS")] == ["TASK-1"]
    h.set_status("JOB-HOOKS", NodeStatus.IN_PROGRESS, NOW)
    node = h.get("JOB-HOOKS")
    assert node is not None and node.status is NodeStatus.IN_PROGRESS
    assert stat.S_IMODE(h.path.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("node", "message"),
    [
        (_node("JOB-X", Level.JOB, "MISSING"), "does not exist"),
        (_node("PROJ-2", Level.PROJECT, "TASK-1"), "cannot be under"),
    ],
)
def test_parent_rules(node: HierarchyNode, message: str) -> None:
    h = open_hierarchy("acme")
    h.upsert(_node("PROJ-CORE", Level.PROJECT))
    h.upsert(_node("JOB-HOOKS", Level.JOB, "PROJ-CORE"))
    h.upsert(_node("TASK-1", Level.TASK, "JOB-HOOKS"))
    with pytest.raises(ValidationFailed, match=message):
        h.upsert(node)


def test_concurrent_writers_lose_no_update() -> None:
    h = open_hierarchy("acme")
    h.upsert(_node("PROJ", Level.PROJECT))

    def writer(k: int) -> None:
        for i in range(10):
            open_hierarchy("acme").upsert(_node(f"JOB-{k}-{i}", Level.JOB, "PROJ"))

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(h.children("PROJ")) == 40


def test_broken_file_is_refused_and_left_untouched() -> None:
    h = open_hierarchy("acme")
    h.path.parent.mkdir(parents=True, exist_ok=True)
    h.path.write_text("nodes: [ {id: 1, level: nope")
    before = h.path.read_text()
    with pytest.raises(ConfigError, match="unreadable hierarchy"):
        h.upsert(_node("PROJ", Level.PROJECT))
    assert h.path.read_text() == before


def test_upsert_many_writes_a_tree_at_once_or_nothing() -> None:
    h = open_hierarchy("acme")
    h.upsert(_node("S", Level.STRATEGY))
    tree = [_node("P", Level.PROJECT, "S"), _node("J", Level.JOB, "P"), _node("T", Level.TASK, "J")]
    h.upsert_many(tree)
    assert [n.id for n in h.all()] == ["S", "P", "J", "T"]
    before = h.path.read_bytes()
    with pytest.raises(ValidationFailed, match="does not exist"):
        h.upsert_many([_node("P2", Level.PROJECT, "S"), _node("J2", Level.JOB, "MISSING")])
    assert h.path.read_bytes() == before  # the valid first node was not written either
