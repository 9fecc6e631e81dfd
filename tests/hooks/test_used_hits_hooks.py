"""The hooks' side of the used-hits labels (decision 245): a hit Claude Code's
UserPromptSubmit injected, whose distinctive value the agent's reply at Stop repeats, becomes a
``useful`` mark (``source: "used"``) in the tenant's relevance set; a reply that does not use it
leaves no label. Real hook processes, the real memory service and embedder."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RecallQuery, RememberRequest
from nika_tui.paths import roots
from nika_tui.tuning.relevance import load_set
from tests.hooks.conftest import TENANT, HookRun, Workspace

pytestmark = [pytest.mark.embedder, pytest.mark.slow]

FACT = "The staging server of acme-api moved to 10.0.9.30 on Monday."
QUESTION = "Which address does the acme-api staging server have now?"
Run = Callable[..., HookRun]


@pytest.fixture
def fact_id(running_service: Any, make_tenant: Callable[..., Any]) -> str:
    make_tenant(TENANT)
    client = running_service.client
    fact = RememberRequest(
        tenant_id=TENANT,
        text=FACT,
        meta=NikaMeta(timestamp=datetime.now(UTC), project_id="acme-api"),
    )
    outcome = client.wait_ingested(TENANT, client.remember(fact), timeout=60)
    # The service's first query embedding is a cold start; the hook's recall is bounded.
    client.recall(RecallQuery(tenant_id=TENANT, query="warm-up", limit=1))
    return str(outcome["id"])


def _turn(run_hook: Run, workspace: Workspace, session: str, reply: str) -> str:
    """One turn: the prompt (recall injected), then Stop with the agent's reply."""
    prompt = workspace.payload(
        "claude/hook_user_prompt_submit.json", session_id=session, prompt=QUESTION
    )
    submitted = run_hook("claude", "UserPromptSubmit", prompt)
    assert submitted.returncode == 0
    stop = {
        "session_id": session,
        "cwd": str(workspace.project / "worker"),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": reply,
    }
    assert run_hook("claude", "Stop", stop).returncode == 0
    return submitted.stdout


def _marks() -> list[dict[str, Any]]:
    path = roots().tenant_data_dir(TENANT) / "tuning" / "relevance.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_a_recalled_hit_the_reply_uses_becomes_a_useful_label(
    run_hook: Run, workspace: Workspace, fact_id: str
) -> None:
    injected = _turn(run_hook, workspace, "c-used", "Staging now answers on 10.0.9.30.")
    assert "10.0.9.30" in injected  # the hit was shown
    [used] = _marks()
    assert used["source"] == "used" and used["useful"] == [fact_id]
    assert used["query"] == QUESTION and used["project_id"] == "acme-api"
    [judged] = load_set(TENANT)
    assert judged.useful == frozenset({fact_id})


def test_a_reply_that_ignores_the_hit_leaves_no_label(
    run_hook: Run, workspace: Workspace, fact_id: str
) -> None:
    injected = _turn(run_hook, workspace, "c-unused", "I could not find that; ask the ops team.")
    assert "10.0.9.30" in injected
    assert _marks() == []
