"""A context is never given again what it holds: Claude Code's UserPromptSubmit recall skips
the facts this session's SessionStart digest or an earlier prompt's recall showed, and the
facts this very session said (its captured prompts), until the context is compacted.

Run as Claude Code runs the hooks (``nika hook claude EVENT``, payloads from
``tests/data/claude``) against the real memory service and embedder; each test also shows
that the recall does find the fact for another session, so a missing line means "skipped",
not "not found".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RecallQuery, RememberRequest
from tests.helpers import retry_until
from tests.hooks.conftest import TENANT, HookRun, Workspace

pytestmark = [pytest.mark.embedder, pytest.mark.slow]

FACT = "The staging server of acme-api moved to 10.0.9.30 on Monday."
FACT_LINE = f"] {FACT}"
"""How the fact reads as a memory line of an injection."""
QUESTION = "Which address does the acme-api staging server have now?"
Run = Callable[..., HookRun]


def _context(run: HookRun) -> str:
    assert run.returncode == 0, run.stderr
    if not run.stdout.strip():
        return ""
    return str(json.loads(run.stdout)["hookSpecificOutput"]["additionalContext"])


def _prompt(run_hook: Run, workspace: Workspace, session: str, prompt: str) -> str:
    payload = workspace.payload(
        "claude/hook_user_prompt_submit.json", session_id=session, prompt=prompt
    )
    return _context(run_hook("claude", "UserPromptSubmit", payload))


def _warm(service: Any) -> None:
    # The service's first query embedding is a cold start; the hook's recall is bounded.
    service.client.recall(RecallQuery(tenant_id=TENANT, query="warm-up", limit=1))


def test_a_fact_shown_by_the_digest_or_a_prompt_is_not_shown_again_in_that_session(
    run_hook: Run, workspace: Workspace, running_service: Any, make_tenant: Callable[..., Any]
) -> None:
    make_tenant(TENANT)
    client = running_service.client
    meta = NikaMeta(timestamp=datetime.now(UTC), project_id="acme-api")
    fact = RememberRequest(tenant_id=TENANT, text=FACT, meta=meta)
    client.wait_ingested(TENANT, client.remember(fact), timeout=60)
    _warm(running_service)

    start = workspace.payload("claude/hook_session_start.json", session_id="s-digest")
    assert FACT_LINE in _context(run_hook("claude", "SessionStart", start))
    assert FACT_LINE not in _prompt(run_hook, workspace, "s-digest", QUESTION)

    assert FACT_LINE in _prompt(run_hook, workspace, "s-prompt", QUESTION)
    assert FACT_LINE not in _prompt(run_hook, workspace, "s-prompt", QUESTION + " Sure?")


def test_what_the_session_said_itself_is_recalled_only_after_its_compaction(
    run_hook: Run, workspace: Workspace, running_service: Any, make_tenant: Callable[..., Any]
) -> None:
    make_tenant(TENANT)
    _warm(running_service)
    session = "7b1f9c2e-3a4d-4e5f-8a9b-0c1d2e3f4a5b"  # the PreCompact sample's session
    _prompt(run_hook, workspace, session, FACT)  # the person says it: captured (semantic)
    retry_until(
        lambda: any(
            "10.0.9.30" in h.record.text
            for h in running_service.client.recall(
                RecallQuery(tenant_id=TENANT, query=QUESTION, limit=5)
            ).hits
        ),
        timeout=60,
        what="the prompt indexed",
    )

    assert FACT_LINE not in _prompt(run_hook, workspace, session, QUESTION)  # it said so
    assert FACT_LINE in _prompt(run_hook, workspace, "another-session", QUESTION)

    run_hook("claude", "PreCompact", workspace.payload("claude/hook_pre_compact.json"))
    compacted = workspace.payload("claude/hook_session_start_compact.json", session_id=session)
    given = [_context(run_hook("claude", "SessionStart", compacted))]
    # The compaction took the turn out of the context: it comes back (the digest of the
    # project's newest facts, or the next prompt's recall), once. The packet may quote the
    # words among its recent queries: the memory line is what counts.
    for n in range(3):
        if any(FACT_LINE in g for g in given):
            break
        given.append(_prompt(run_hook, workspace, session, f"{QUESTION} ({n})"))
    assert sum(g.count(FACT_LINE) for g in given) == 1
    assert FACT_LINE not in _prompt(run_hook, workspace, session, QUESTION + " Really?")
