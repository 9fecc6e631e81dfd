"""Hierarchical synthesis (strategy A, step 2): a deterministic digest per hierarchy node.

Every node of the hierarchy (strategy → project → job → task → atomic) gets three sections:

- **decided** — memories that state a decision (« decided », « chose », « switched to »,
  « décidé »…), and for a finished node (done / cancelled / obsolete) what it concluded;
- **current** — the node's status from the YAML hierarchy (the golden rule: status never comes
  from a remembered summary) and the memories nearest the centroid of its subtree;
- **open** — children not finished yet, and review-queue pairs (UNCERTAIN) touching its memories.

Extractive and offline: a group's memories are scored by cosine to their centroid, a candidate
at cosine ≥ :data:`DUPLICATE_COSINE` to one already picked is folded into it (its id joins that
line's ids), at most :data:`PICKS` lines a section, then ordered by valid time (ties by id).
Every line carries the ids of the memories it condenses. Memories naming project / job / task
ids absent from the hierarchy get a node of their own (status ``unknown``).

The atomic level (decision 485): a memory's NIKA_META names a project, a job and a task, never
an atomic step, so an atomic node condenses no memory. Its digest is its status from the
hierarchy (current), and for a finished one that it ended (decided); its task lists it as open
while it is unfinished. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from nika_tui.domain.hierarchy import LEVEL_ORDER, HierarchyNode

PICKS = 5
DUPLICATE_COSINE = 0.9
"""Cosine from which two memories say the same thing in a digest (all-MiniLM-L6-v2)."""
FINISHED = frozenset({"done", "cancelled", "obsolete"})
# A decision stated in a sentence (also how the importer picks decisions out of a session).
DECISION = re.compile(
    r"(?i)\b(decided|decision|we chose|chose|agreed|settled on|switched to|moved to|will use|"
    r"adopt(?:ed)?|décid[ée]s?|choisi|retenu)\b"
)


@dataclass(frozen=True, slots=True)
class DigestMemory:
    """What the synthesis needs of one current memory."""

    id: str
    text: str
    valid_from: datetime
    project_id: str
    job_id: str
    task_id: str
    vector: Sequence[float]


@dataclass(frozen=True, slots=True)
class DigestLine:
    """One line of a digest and the ids of the memories it condenses (first: the line's own)."""

    text: str
    ids: tuple[str, ...]
    valid_from: datetime | None = None


@dataclass
class NodeDigest:
    """The digest of one node."""

    node_id: str
    level: str
    title: str
    status: str
    parent_id: str | None
    memory_count: int = 0
    scope: dict[str, str] = field(default_factory=dict)
    """``project_id`` / ``job_id`` / ``task_id`` of the node and its ancestors."""
    decided: list[DigestLine] = field(default_factory=list)
    current: list[DigestLine] = field(default_factory=list)
    open: list[DigestLine] = field(default_factory=list)

    def condensed_ids(self) -> list[str]:
        """Every memory id a line of this digest condenses, in line order, once each."""
        seen: dict[str, None] = {}
        for line in (*self.decided, *self.current, *self.open):
            seen.update(dict.fromkeys(line.ids))
        return list(seen)


def _home(m: DigestMemory, known: Mapping[str, HierarchyNode]) -> str:
    """The deepest id a memory names (task, then job, then project)."""
    for node_id in (m.task_id, m.job_id, m.project_id):
        if node_id:
            return node_id
    return ""


def _virtual_nodes(
    memories: Sequence[DigestMemory], nodes: Mapping[str, HierarchyNode], now: datetime
) -> dict[str, HierarchyNode]:
    """The hierarchy plus a node for every project / job / task id only the memories name."""
    out = dict(nodes)
    for m in memories:
        parent: str | None = None
        for level, node_id in (("project", m.project_id), ("job", m.job_id), ("task", m.task_id)):
            if not node_id:
                continue
            if node_id not in out:
                out[node_id] = HierarchyNode.model_validate(
                    {"id": node_id, "level": level, "title": "", "status": "todo",
                     "parent_id": parent, "updated_at": now}
                )  # fmt: skip
            parent = node_id
    return out


def _scope(node: HierarchyNode, by_id: Mapping[str, HierarchyNode]) -> dict[str, str]:
    scope: dict[str, str] = {}
    current: HierarchyNode | None = node
    for _ in LEVEL_ORDER:
        if current is None:
            break
        if current.level.value in ("project", "job", "task"):
            scope.setdefault(f"{current.level.value}_id", current.id)
        current = by_id.get(current.parent_id) if current.parent_id else None
    return scope


def _pick(group: Sequence[DigestMemory], limit: int) -> list[DigestLine]:
    """The memories nearest the group's centroid, near-duplicates folded, by valid time."""
    if not group:
        return []
    ordered = sorted(group, key=lambda m: m.id)
    matrix = np.asarray([m.vector for m in ordered], dtype=np.float64)
    centroid = matrix.mean(axis=0)
    norm = float(np.linalg.norm(centroid))
    scores = matrix @ (centroid / norm) if norm > 0 else np.zeros(len(ordered))
    rank = sorted(range(len(ordered)), key=lambda i: (-round(float(scores[i]), 9), ordered[i].id))
    picked: list[int] = []
    folded: dict[int, list[str]] = {}
    for i in rank:
        twin = next((j for j in picked if float(matrix[i] @ matrix[j]) >= DUPLICATE_COSINE), None)
        if twin is not None:
            folded[twin].append(ordered[i].id)
        elif len(picked) < limit:
            picked.append(i)
            folded[i] = [ordered[i].id]
    lines = [DigestLine(ordered[i].text, tuple(folded[i]), ordered[i].valid_from) for i in picked]
    return sorted(lines, key=_by_time)


def _child_line(node: HierarchyNode) -> str:
    """``{level} {id} {title}: {status}``, a node as its parent's digest lists it."""
    return f"{node.level.value} {node.id} {node.title}".strip() + f": {node.status.value}"


def _by_time(line: DigestLine) -> tuple[datetime, str]:
    """Valid time, then the first id (a stable order for lines of one instant)."""
    return (line.valid_from or datetime.min, line.ids[0] if line.ids else "")


def synthesise(
    memories: Sequence[DigestMemory],
    nodes: Sequence[HierarchyNode],
    open_pairs: Sequence[tuple[str, str, str]],
    now: datetime,
    picks: int = PICKS,
) -> list[NodeDigest]:
    """One digest per node that has memories or open children, parents before children.

    Args:
        memories: The current memories to condense (already filtered for the destination).
        nodes: The tenant's hierarchy.
        open_pairs: Pending review items as ``(review_id, old_id, new_id)``.
        now: For nodes only the memories name.
        picks: Lines per section at most.

    Returns:
        Digests ordered by level (strategy first), then node id.
    """
    by_id = _virtual_nodes(memories, {n.id: n for n in nodes}, now)
    children: dict[str, list[HierarchyNode]] = {}
    for n in by_id.values():
        if n.parent_id:
            children.setdefault(n.parent_id, []).append(n)
    own: dict[str, list[DigestMemory]] = {}
    for m in memories:
        own.setdefault(_home(m, by_id), []).append(m)

    def subtree(node_id: str, seen: frozenset[str] = frozenset()) -> list[DigestMemory]:
        found = list(own.get(node_id, []))
        for child in children.get(node_id, []):
            if child.id not in seen:
                found.extend(subtree(child.id, seen | {node_id}))
        return found

    digests: list[NodeDigest] = []
    level_rank = {level: i for i, level in enumerate(LEVEL_ORDER)}
    for node in sorted(by_id.values(), key=lambda n: (level_rank[n.level.value], n.id)):
        group = subtree(node.id)
        kids = sorted(children.get(node.id, []), key=lambda n: n.id)
        unfinished = [k for k in kids if k.status.value not in FINISHED]
        # An atomic node has no memories (none can name it: decision 485) and no children; its
        # digest is its status from the hierarchy, so it is always written.
        atomic = node.level.value == "atomic"
        if not group and not unfinished and not atomic:
            continue
        status = node.status.value if node.id in {n.id for n in nodes} else "unknown"
        digest = NodeDigest(node.id, node.level.value, node.title, status, node.parent_id)
        digest.memory_count = len(group)
        digest.scope = _scope(node, by_id)
        decisions = [m for m in group if DECISION.search(m.text)]
        decided = _pick(decisions, picks)
        if status in FINISHED:
            # A finished node keeps its decisions first, then what else its work left, within
            # the one section's cap; the section reads in valid time like the others.
            taken = {i for line in decided for i in line.ids}
            rest = [line for line in _pick(group, picks) if not taken & set(line.ids)]
            decided += rest[: max(0, picks - len(decided))]
        if atomic and status in FINISHED and not decided:
            decided = [DigestLine(_child_line(node), ())]  # what it concluded: that it ended
        digest.decided = sorted(decided, key=_by_time)
        digest.current = [DigestLine(f"status: {status} (from the hierarchy)", ())]
        digest.current += _pick(group, picks) if status not in FINISHED else []
        ids = {m.id for m in group}
        digest.open = [DigestLine(_child_line(k), ()) for k in unfinished]
        digest.open += [
            DigestLine(f"review {rid}: is {new} replacing {old}?", (old, new))
            for rid, old, new in sorted(open_pairs)
            if old in ids or new in ids
        ]
        digests.append(digest)
    return digests
