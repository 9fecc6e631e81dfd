"""Facts and decisions of an imported session go to semantic memory; the turns to episodic.

Real session files (a Claude Code JSONL, a Codex rollout, as the CLIs write them), the real
``nika import`` in-process, the memory service with the real embedder and Qdrant Edge.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from nika_tui.cli import main
from nika_tui.domain import protocol_requests as req
from nika_tui.domain.memory import MemoryRecord
from tests.importer.sessions_on_disk import claude_session, codex_rollout
from tests.plugins.memory import RunningService

pytestmark = [pytest.mark.embedder, pytest.mark.slow]

TENANT = "acme"
AT = datetime(2026, 5, 4, 10, 0, tzinfo=UTC)
REQUEST = "Please add a retry with backoff to the upload client in uploader.py."
DECISION = "After comparing both libraries we decided to use tenacity for retries."
ANSWER = f"{DECISION} I added it to uploader.py with five attempts."
QUESTION = "Can you write a test for the invoice renderer?"
FACT = "The invoice templates live in billing/templates/invoices."
CODEX_ANSWER = f"{FACT} I wrote tests/test_invoice.py for both of them."


def memories(svc: RunningService, layer: str) -> list[MemoryRecord]:
    reply = svc.client.send(req.MemoryListRequest(TENANT, layer=layer, limit=100))
    # The browser's page adds valid_until and review_id to each record.
    return [
        MemoryRecord.model_validate(
            {k: v for k, v in r.items() if k not in ("valid_until", "review_id")}
        )
        for r in reply.records
    ]


def test_a_decision_in_an_answer_lands_in_semantic_and_a_task_request_does_not(
    running_service: RunningService, make_tenant: Callable[..., Any], tmp_path: Path
) -> None:
    make_tenant(TENANT)
    claude = claude_session(tmp_path / "claude", "s-retry", "/w/acme", AT, [(REQUEST, ANSWER)])
    codex = codex_rollout(
        tmp_path / "codex", "019-inv", "/w/acme", AT.replace(hour=11), [(QUESTION, CODEX_ANSWER)]
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            ["import", "--tenant", TENANT, "--wait", "--timeout", "120", str(claude), str(codex)]
        )
    assert code == 0, out.getvalue()

    semantic = {m.text: m for m in memories(running_service, "semantic")}
    episodic = {m.text for m in memories(running_service, "episodic")}
    # Only the sentences that state a decision or a fact are semantic, each alone.
    assert set(semantic) == {DECISION, FACT}
    # The request, the question and the whole answers are the turns' history.
    assert {REQUEST, ANSWER, QUESTION, CODEX_ANSWER} <= episodic
    decided = semantic[DECISION]
    # The decision keeps where it was said: the answer's line (2: the summary, 3: the
    # prompt) and its real time (the answer is written 20 s after the prompt).
    assert decided.meta.source == f"{claude.resolve()}:3"
    assert decided.meta.session_id == "s-retry" and decided.meta.agent_type == "claude-code"
    assert decided.valid_from == decided.meta.timestamp == AT.replace(second=20)
    fact = semantic[FACT]
    assert fact.meta.source.startswith(f"{codex.resolve()}:")
    assert fact.meta.agent_type == "codex" and fact.meta.session_id == "019-inv"
    assert fact.valid_from.date() == AT.date() and fact.valid_from > AT.replace(hour=11)
