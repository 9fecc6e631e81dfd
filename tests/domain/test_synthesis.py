"""The hierarchical digest: deterministic, extractive, every line with its memory ids."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from nika_tui.domain.hierarchy import HierarchyNode, Level, NodeStatus
from nika_tui.domain.synthesis import DigestMemory, synthesise

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
