"""Import through the real service, then recall as of a date and trace the timeline.

Real embedder, real Qdrant Edge, the rules judge, the service loop, the CLI in-process.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from nika_tui.cli import main
from nika_tui.domain.memory import Layer, Status
from nika_tui.domain.requests import RecallQuery
from tests.importer.sessions_on_disk import claude_session, codex_rollout
from tests.plugins.memory import RunningService

pytestmark = [pytest.mark.embedder, pytest.mark.slow]

TENANT = "acme"
MARCH = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
JUNE = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
OLD = "The staging server is staging-1.acme.internal"
NEW = "The staging server moved to staging-2.acme.internal"
QUESTION = "where is the staging server"


def cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(args))
    return code, out.getvalue()


def import_march_and_june(tmp_path: Path) -> None:
    """Two sessions, named newest first on the command line: the import orders them in time."""
    june = codex_rollout(
        tmp_path / "codex",
        "019-june",
        "/w/acme-api",
        JUNE,
        [(NEW, "Updated the deploy config: staging now points at staging-2.acme.internal.")],
    )
    march = claude_session(
        tmp_path / "claude",
        "march-1",
        "/w/acme-api",
        MARCH,
        [(OLD, "Configured the deploy job to target staging-1.acme.internal for staging.")],
    )
    code, out = cli(
        "import",
        "--tenant",
        TENANT,
        "--project",
        "acme-api",
        "--wait",
        "--timeout",
        "120",
        "--json",
        str(june),
        str(march),
    )
    assert code == 0, out


@pytest.fixture
def imported(
    running_service: RunningService, make_tenant: Callable[..., Any], tmp_path: Path
) -> RunningService:
    make_tenant(TENANT)
    import_march_and_june(tmp_path)
    return running_service


def semantic(svc: RunningService, **kw: Any) -> list[str]:
    q = RecallQuery(tenant_id=TENANT, query=QUESTION, layer=Layer.SEMANTIC, **kw)
    return [h.record.text for h in svc.client.recall(q).hits]


def test_imported_facts_supersede_in_valid_time_order(imported: RunningService) -> None:
    svc = imported
    assert semantic(svc) == [NEW]
    both = svc.client.recall(
        RecallQuery(tenant_id=TENANT, query=QUESTION, layer=Layer.SEMANTIC, include_retired=True)
    )
    by_text = {h.record.text: h.record for h in both.hits}
    old, new = by_text[OLD], by_text[NEW]
    assert old.status is Status.RETIRED and old.superseded_by == new.id
    assert (old.valid_from, new.valid_from) == (MARCH, JUNE.replace(second=30))
    assert old.meta.source.endswith(":2") and old.meta.agent_type == "claude-code"
    assert new.meta.agent_type == "codex" and new.meta.session_id == "019-june"


def test_recall_as_of_answers_with_what_was_current_then(imported: RunningService) -> None:
    svc = imported
    assert semantic(svc, as_of=datetime(2026, 4, 15, tzinfo=UTC)) == [OLD]
    assert semantic(svc, as_of=datetime(2026, 7, 1, tzinfo=UTC)) == [NEW]
    before = svc.client.recall(
        RecallQuery(tenant_id=TENANT, query=QUESTION, as_of=datetime(2026, 1, 1, tzinfo=UTC))
    )
    assert before.hits == [] and before.palace == f"no memory for {QUESTION}"
    code, out = cli("memory", "recall", "--tenant", TENANT, "--as-of", "2026-04-15", QUESTION)
    assert code == 0 and "staging-1.acme.internal" in out and "staging-2" not in out.split("\n")[1]
    code, out = cli("memory", "recall", "--tenant", TENANT, "--as-of", "April", QUESTION)
    assert code == 2


def test_timeline_shows_each_version_when_and_what_replaced_it(imported: RunningService) -> None:
    code, out = cli("memory", "timeline", "--tenant", TENANT, "--json", QUESTION)
    assert code == 0
    timelines = json.loads(out)["timelines"]
    chain = next(t for t in timelines if any(v["text"] == OLD for v in t))
    assert [v["text"] for v in chain] == [OLD, NEW]
    first, second = chain
    assert first["valid_from"].startswith("2026-03-02T09:00")
    assert first["valid_until"] == second["valid_from"]
    assert first["replaced_by"] == second["id"] and first["replaced_by_text"] == NEW
    assert first["why"] and second["valid_until"] is None and second["status"] == "current"
    code, text = cli("memory", "timeline", "--tenant", TENANT, QUESTION)
    assert f"replaced by [{second['id']}]" in text and "why:" in text and "(current)" in text
    code, miss = cli("memory", "timeline", "--tenant", TENANT, "zebra migration to Mars")
    assert miss.strip() == "no memory for zebra migration to Mars"
