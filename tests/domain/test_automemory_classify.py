"""``classify``: which auto-memory kind a memory is, first rule first (docs/automemory.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple

import pytest

from nika_tui.domain.automemory import MemoryKind, classify
from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.memory import MemoryRecord

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)


class Case(NamedTuple):
    test_id: str
    text: str
    meta: dict[str, object]
    kind: MemoryKind | None


CASES = [
    Case(
        "pinned-kind-wins-over-every-rule",
        "Docs at https://wiki.acme.dev",
        {"entity_ids": ("automemory:feedback",), "project_id": "web"},
        MemoryKind.FEEDBACK,
    ),
    Case(
        "unknown-pinned-kind-falls-through",
        "The web app deploys on Thursdays",
        {"entity_ids": ("automemory:gossip",), "project_id": "web", "action_type": "deploy"},
        MemoryKind.PROJECT,
    ),
    Case("url-is-reference", "Runbook: https://wiki.acme.dev/runbook", {}, MemoryKind.REFERENCE),
    Case(
        "person-fixing-is-feedback",
        "Do not mock the database in tests",
        {"trigger": "user", "intent": "fix", "project_id": "web"},
        MemoryKind.FEEDBACK,
    ),
    Case(
        "person-reviewing-is-feedback",
        "Prefer small pull requests",
        {"trigger": "user", "action_type": "review"},
        MemoryKind.FEEDBACK,
    ),
    Case(
        "person-outside-a-project-is-user",
        "I am a data scientist new to React",
        {"trigger": "user"},
        MemoryKind.USER,
    ),
    Case(
        "project-work-is-project",
        "The release freeze starts on Friday",
        {"project_id": "web", "action_type": "comms"},
        MemoryKind.PROJECT,
    ),
    Case(
        "code-work-is-derivable",
        "Renamed parse_args to parse_options",
        {"project_id": "web", "action_type": "code"},
        None,
    ),
    Case(
        "debug-work-is-derivable",
        "The flaky test was a race in the cache",
        {"project_id": "web", "action_type": "debug"},
        None,
    ),
    Case("machine-made-outside-a-project", "Disk usage at 71%", {"trigger": "cron"}, None),
    Case(
        "agent-fix-in-a-project-is-project-not-feedback",
        "The login form now validates emails",
        {"trigger": "autonomous", "intent": "fix", "project_id": "web"},
        MemoryKind.PROJECT,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_classify(case: Case) -> None:
    meta = NikaMeta(timestamp=T0, **case.meta)  # type: ignore[arg-type]
    record = MemoryRecord(
        id="m1",
        tenant_id="acme",
        text=case.text,
        meta=meta,
        valid_from=T0,
        asserted_at=T0,
        content_hash="h",
    )
    assert classify(record) == case.kind
