"""The workflow hierarchy: strategy → project → job → task → atomic (seed: Workflow layer).

The golden rule: execution status comes from here, never from a remembered summary.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

LEVEL_ORDER = ("strategy", "project", "job", "task", "atomic")


class Level(StrEnum):
    STRATEGY = "strategy"
    PROJECT = "project"
    JOB = "job"
    TASK = "task"
    ATOMIC = "atomic"


class NodeStatus(StrEnum):
    TODO = "todo"
    IN_PROGRESS = "in_progress"
    BLOCKED = "blocked"
    DONE = "done"
    CANCELLED = "cancelled"
    OBSOLETE = "obsolete"


class HierarchyNode(BaseModel):
    """One entity of the hierarchy."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=200)
    level: Level
    title: str = ""
    status: NodeStatus = NodeStatus.TODO
    parent_id: str | None = None
    deadline: datetime | None = None
    assignee: str | None = None
    updated_at: datetime


def check_parent(child: HierarchyNode, parent: HierarchyNode | None) -> str | None:
    """Why ``child`` cannot hang under ``parent`` (None when it can).

    A parent must sit strictly above its child (a task under a job, not a job under a task).
    """
    if child.parent_id is None:
        return None
    if parent is None:
        return f"parent {child.parent_id!r} does not exist"
    if LEVEL_ORDER.index(parent.level.value) >= LEVEL_ORDER.index(child.level.value):
        return f"a {child.level.value} cannot be under a {parent.level.value}"
    return None
