"""The hierarchical digest: deterministic, extractive, every line with its memory ids."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from nika_tui.domain.hierarchy import HierarchyNode, Level, NodeStatus
from nika_tui.domain.synthesis import DigestLine, DigestMemory, synthesise

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def _unit(v: list[float]) -> list[float]:
    a = np.asarray(v, dtype=float)
    return list(a / np.linalg.norm(a))


def _nodes() -> list[HierarchyNode]:
    return [
        HierarchyNode(id="p", level=Level.PROJECT, status=NodeStatus.IN_PROGRESS, updated_at=T0),
        HierarchyNode(
            id="done-job", level=Level.JOB, status=NodeStatus.DONE, parent_id="p", updated_at=T0
        ),
        HierarchyNode(
            id="open-job", level=Level.JOB, status=NodeStatus.TODO, parent_id="p", updated_at=T0
        ),
    ]


def _memories() -> list[DigestMemory]:
    def m(i: str, text: str, day: int, vec: list[float], job: str = "done-job") -> DigestMemory:
        return DigestMemory(i, text, T0 + timedelta(days=day), "p", job, "", _unit(vec))

    return [
        m("a", "We decided to use PostgreSQL", 3, [0.6, 0, 0.8]),
        m("b", "Orders are stored in PostgreSQL", 1, [0.9, 0.1, 0]),
        m("b2", "Orders are stored in PostgreSQL.", 2, [0.9, 0.1, 0.001]),  # a near-duplicate
        m("c", "The UI uses React", 0, [0, 1, 0]),
    ]


def test_digest_sections_and_ids() -> None:
    digests = {d.node_id: d for d in synthesise(_memories(), _nodes(), [("r1", "b", "c")], T0)}
    assert list(digests) == ["p", "done-job"]  # parents first; the open job has no memories
    project = digests["p"]
    assert project.scope == {"project_id": "p"} and project.memory_count == 4
    assert project.current[0].text == "status: in_progress (from the hierarchy)"
    picked = project.current[1:]
    assert [line.valid_from for line in picked] == sorted(line.valid_from for line in picked)
    folded = next(line for line in picked if "b" in line.ids or "b2" in line.ids)
    assert set(folded.ids) == {"b", "b2"}  # one line condenses both
    assert [line.ids for line in project.decided] == [("a",)]
    assert any("open-job" in line.text for line in project.open)
    assert any(line.ids == ("b", "c") for line in project.open)  # the pending review pair
    job = digests["done-job"]
    assert job.status == "done" and len(job.current) == 1  # finished: all in "decided"
    assert {i for line in job.decided for i in line.ids} == {"a", "b", "b2", "c"}
    times = [line.valid_from for line in job.decided]
    assert times == sorted(times)  # decisions and the rest, one section in valid time


def test_a_finished_nodes_decided_section_is_capped_and_in_valid_time() -> None:
    # Two decisions and eight other facts, all distinct: one section, at most `picks` lines.
    def m(i: int, text: str, vec: list[float]) -> DigestMemory:
        return DigestMemory(f"m{i}", text, T0 + timedelta(days=(7 * i) % 10), "p", "done-job",
                            "", _unit(vec))  # fmt: skip

    def axis(i: int) -> list[float]:
        return [1.0 if k == i else 0.0 for k in range(10)]  # no two alike: nothing folds

    memories = [m(i, f"We decided on option {i}", axis(i)) for i in range(2)]
    memories += [m(i, f"Service {i} runs in zone {i}", axis(i)) for i in range(2, 10)]
    digests = synthesise(memories, _nodes(), [], T0, picks=5)
    job = next(d for d in digests if d.node_id == "done-job")
    assert len(job.decided) == 5  # two decisions and three of the rest, not 2 + 5
    assert {"m0", "m1"} <= {i for line in job.decided for i in line.ids}  # decisions first
    times = [line.valid_from for line in job.decided]
    assert times == sorted(times)


def test_digest_is_deterministic() -> None:
    first = synthesise(_memories(), _nodes(), [], T0)
    again = synthesise(list(reversed(_memories())), list(reversed(_nodes())), [], T0)
    assert first == again


def test_ids_only_the_memories_name_get_a_node() -> None:
    mem = DigestMemory("x", "A fact", T0, "q", "qj", "", _unit([1, 0, 0]))
    digests = synthesise([mem], [], [], T0)
    assert [(d.node_id, d.level, d.status) for d in digests] == [
        ("q", "project", "unknown"), ("qj", "job", "unknown")
    ]  # fmt: skip


def _task_with_atomics(task_status: NodeStatus) -> list[HierarchyNode]:
    """p → j → t with two atomic steps under t: ``a-open`` (todo), ``a-done`` (done)."""

    def node(i: str, level: Level, status: NodeStatus, parent: str | None) -> HierarchyNode:
        title = f"step {i}" if level is Level.ATOMIC else ""
        return HierarchyNode(
            id=i, level=level, status=status, parent_id=parent, title=title, updated_at=T0
        )

    return [
        node("p", Level.PROJECT, NodeStatus.IN_PROGRESS, None),
        node("j", Level.JOB, NodeStatus.IN_PROGRESS, "p"),
        node("t", Level.TASK, task_status, "j"),
        node("a-open", Level.ATOMIC, NodeStatus.TODO, "t"),
        node("a-done", Level.ATOMIC, NodeStatus.DONE, "t"),
    ]


def _on_task(i: str, text: str) -> DigestMemory:
    return DigestMemory(i, text, T0, "p", "j", "t", _unit([1, 0, 0]))  # the finest id: the task


def test_an_atomic_node_gets_its_digest_from_the_hierarchy() -> None:
    nodes = _task_with_atomics(NodeStatus.IN_PROGRESS)
    memory = _on_task("m", "The importer reads CSV")
    digests = {d.node_id: d for d in synthesise([memory], nodes, [], T0)}
    assert list(digests) == ["p", "j", "t", "a-done", "a-open"]  # parents first, then by id
    todo, done = digests["a-open"], digests["a-done"]
    assert (todo.level, todo.status, todo.parent_id) == ("atomic", "todo", "t")
    # No memory names an atomic step (NIKA_META stops at task_id): the memory stays the task's.
    assert todo.memory_count == done.memory_count == 0 and digests["t"].memory_count == 1
    assert todo.condensed_ids() == done.condensed_ids() == []
    assert todo.current == [DigestLine("status: todo (from the hierarchy)", ())]
    assert todo.decided == [] and todo.open == []
    # Finished: its status is current, and what it concluded (that it ended) is decided.
    assert done.current == [DigestLine("status: done (from the hierarchy)", ())]
    assert done.decided == [DigestLine("atomic a-done step a-done: done", ())]
    # The unfinished task lists its unfinished atomic step as open, not the finished one.
    assert [line.text for line in digests["t"].open] == ["atomic a-open step a-open: todo"]


def test_an_atomic_nodes_status_is_the_hierarchys_whatever_the_memories_say() -> None:
    # The golden rule: a memory claiming the step is done does not make it done.
    claim = _on_task("m", "Step a-open is done, we decided to ship it")
    nodes = _task_with_atomics(NodeStatus.IN_PROGRESS)
    digests = {d.node_id: d for d in synthesise([claim], nodes, [], T0)}
    assert digests["a-open"].status == "todo" and digests["a-open"].decided == []
    assert "atomic a-open step a-open: todo" in [line.text for line in digests["t"].open]
    # Marked done in the hierarchy, the same step is decided, and its task no longer lists it.
    done_now = [
        n.model_copy(update={"status": NodeStatus.DONE}) if n.id == "a-open" else n for n in nodes
    ]
    after = {d.node_id: d for d in synthesise([claim], done_now, [], T0)}
    assert after["a-open"].status == "done"
    assert after["a-open"].decided == [DigestLine("atomic a-open step a-open: done", ())]
    assert after["t"].open == []


def test_a_finished_tasks_atomic_steps_still_get_their_digest() -> None:
    # A finished task with no memory and no unfinished step gets no digest (nothing to say; nor
    # does its job), but each atomic step of it still has its status from the hierarchy.
    nodes = _task_with_atomics(NodeStatus.DONE)
    nodes = [n.model_copy(update={"status": NodeStatus.CANCELLED}) if n.id == "a-open" else n
             for n in nodes]  # fmt: skip
    digests = {d.node_id: d for d in synthesise([], nodes, [], T0)}
    assert sorted(digests) == ["a-done", "a-open", "p"]  # p: its job j is unfinished
    assert digests["a-open"].decided == [DigestLine("atomic a-open step a-open: cancelled", ())]
