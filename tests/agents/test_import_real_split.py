"""The import's fact/decision split on sessions the REAL CLIs wrote (claude -p, codex exec).

Each CLI runs once headless: the person asks for a task, the mock model answers with a
decision and an account of the work. The session store the binary wrote is imported into a
second tenant through the memory service: the decision sentence of the answer is a semantic
memory of its own, with the time of the session line holding it; the task request is not
semantic (it is the turn's history, episodic).
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
from nika_tui.domain import protocol_requests as req
from nika_tui.domain.memory import MemoryRecord
from nika_tui.importer.sessions import parse_time
from nika_tui.services.agent_homes import claude_config_dir, codex_home
from tests.agents.conftest import AgentTenant

pytestmark = [pytest.mark.agents, pytest.mark.embedder, pytest.mark.slow]

IMPORTED = "imported"
REQUEST = "Please add a retry with backoff to the upload client in uploader.py."
DECISION = "After comparing both libraries we decided to use tenacity for retries."
ANSWER = f"{DECISION} I added it to uploader.py with five attempts."


def _import(source: Path) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            ["import", "--tenant", IMPORTED, "--json", "--wait", "--timeout", "120", str(source)]
        )
    assert code == 0, out.getvalue()


def _layer(client: Any, layer: str) -> list[MemoryRecord]:
    reply = client.send(req.MemoryListRequest(IMPORTED, layer=layer, limit=200))
    # The browser's page adds valid_until and review_id to each record.
    return [
        MemoryRecord.model_validate(
            {k: v for k, v in r.items() if k not in ("valid_until", "review_id")}
        )
        for r in reply.records
    ]


def _check_split(client: Any, before: datetime, after: datetime) -> None:
    semantic = _layer(client, "semantic")
    assert not any("retry with backoff" in m.text for m in semantic), [m.text for m in semantic]
    [decided] = [m for m in semantic if m.text == DECISION]
    assert any(m.text == REQUEST for m in _layer(client, "episodic"))
    path, line = decided.meta.source.rsplit(":", 1)
    raw = Path(path).read_text(encoding="utf-8").splitlines()[int(line) - 1]
    assert "tenacity" in raw  # the source names the line of the answer holding the decision
    at = parse_time(json.loads(raw).get("timestamp"))
    assert at is not None and decided.valid_from == at and before <= at <= after


def test_claude_answer_decision_is_semantic_and_the_request_is_not(
    claude_bin: Path,
    agent_tenant: Callable[..., AgentTenant],
    running_service: Any,
    make_tenant: Callable[..., Any],
) -> None:
    tenant = agent_tenant(["claude-code"])
    tenant.mock.reply = lambda body: ANSWER
    make_tenant(IMPORTED)
    before = datetime.now(UTC)
    run = tenant.claude(claude_bin, REQUEST)
    after = datetime.now(UTC)
    assert run.returncode == 0, run.stderr

    _import(claude_config_dir(tenant.tenant_id) / "projects")
    _check_split(running_service.client, before, after)


def test_codex_answer_decision_is_semantic_and_the_request_is_not(
    codex_bin: Path,
    agent_tenant: Callable[..., AgentTenant],
    running_service: Any,
    make_tenant: Callable[..., Any],
) -> None:
    tenant = agent_tenant(["codex"])
    tenant.mock.reply = lambda body: ANSWER
    make_tenant(IMPORTED)
    before = datetime.now(UTC)
    run = tenant.codex(codex_bin, REQUEST)
    after = datetime.now(UTC)
    assert run.returncode == 0, run.stderr

    _import(codex_home(tenant.tenant_id) / "sessions")
    _check_split(running_service.client, before, after)
