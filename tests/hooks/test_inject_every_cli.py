"""One injection module for every CLI: Gemini CLI's BeforeAgent and OpenCode's first prompt get
the recall Claude Code's UserPromptSubmit gets, from the same per-session record of what was
shown, so a memory reaches a context once.

Payloads are the fields these CLIs send (``session_id``, ``cwd``, ``prompt``), run through the
real memory service with the real embedder.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RecallQuery, RememberRequest
from nika_tui.hooks.inject import strip_injected
from tests.hooks.conftest import TENANT, HookRun, Workspace

pytestmark = [pytest.mark.embedder, pytest.mark.slow]

FACT = "The staging server of acme-api moved to 10.0.9.30 on Monday."
QUESTION = "Which address does the acme-api staging server have now?"
Run = Callable[..., HookRun]


@pytest.fixture
def fact_stored(running_service: Any, make_tenant: Callable[..., Any]) -> None:
    make_tenant(TENANT)
    client = running_service.client
    fact = RememberRequest(
        tenant_id=TENANT,
        text=FACT,
        meta=NikaMeta(timestamp=datetime.now(UTC), project_id="acme-api"),
    )
    client.wait_ingested(TENANT, client.remember(fact), timeout=60)
    # The service's first query embedding is a cold start; the hook's recall is bounded.
    client.recall(RecallQuery(tenant_id=TENANT, query="warm-up", limit=1))


def _context(run: HookRun, event: str) -> str:
    assert run.returncode == 0
    if not run.stdout.strip():
        return ""
    out = json.loads(run.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == event
    return str(out["additionalContext"])


def _payload(workspace: Workspace, session: str, prompt: str) -> dict[str, str]:
    return {"session_id": session, "cwd": str(workspace.project / "worker"), "prompt": prompt}


def test_gemini_before_agent_injects_the_fact_once_per_session(
    run_hook: Run, workspace: Workspace, fact_stored: None
) -> None:
    first = _context(
        run_hook("gemini", "BeforeAgent", _payload(workspace, "g-1", QUESTION)), "BeforeAgent"
    )
    assert first.count("10.0.9.30") == 1
    assert first.startswith('<nika-memory tenant="acme" project="acme-api">')
    again = _context(
        run_hook("gemini", "BeforeAgent", _payload(workspace, "g-1", QUESTION + " Sure?")),
        "BeforeAgent",
    )
    assert "10.0.9.30" not in again  # this context has it already
    other = _context(
        run_hook("gemini", "BeforeAgent", _payload(workspace, "g-2", QUESTION)), "BeforeAgent"
    )
    assert "10.0.9.30" in other  # another session's context does not


def test_opencode_first_prompt_shows_a_memory_once_across_opening_and_recall(
    run_hook: Run, workspace: Workspace, fact_stored: None
) -> None:
    first = _context(
        run_hook("opencode", "UserPromptSubmit", _payload(workspace, "o-1", QUESTION)),
        "UserPromptSubmit",
    )
    assert first.count("10.0.9.30") == 1
    again = _context(
        run_hook("opencode", "UserPromptSubmit", _payload(workspace, "o-1", QUESTION + " Sure?")),
        "UserPromptSubmit",
    )
    assert "10.0.9.30" not in again and "Project state" not in again  # the opening, once


def test_injected_blocks_are_not_the_users_words() -> None:
    prompt = '<nika-memory tenant="acme">\nold\n</nika-memory>\n<hook_context>x</hook_context> hi'
    assert strip_injected(prompt) == "hi"
