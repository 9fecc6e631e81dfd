"""The real Claude Code (``claude -p``) with nika's hooks, against the mock Anthropic server.

What is asserted is what reached the model (the mock's request log) and what nika stored, not
our internals: a fact typed in one session is in the model request of a *new* session that asks
about it; after two compactions (and a refused one) the newest handoff reaches the model once;
the fill nika shows is the one the CLI's own window implies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nika_tui.services import redis_keys
from nika_tui.services.wm_store import read_working_memory
from tests.agents.conftest import AgentTenant
from tests.agents.mock_anthropic_openai import default_reply
from tests.helpers import retry_until

pytestmark = [pytest.mark.agents, pytest.mark.embedder, pytest.mark.slow]

FACT = "The staging server moved to 10.0.9.30 last week, use that address from now on."


def _last_request_text(tenant: AgentTenant) -> str:
    requests = tenant.mock.model_requests("/messages")
    assert requests, "Claude Code sent no request to the mock"
    return requests[-1].text()


def test_a_fact_typed_in_one_session_reaches_a_new_session_that_asks(
    claude_bin: Path, agent_tenant: Any, running_service: Any, make_tenant: Any
) -> None:
    tenant = agent_tenant(["claude-code"])
    first = tenant.claude(claude_bin, FACT)
    assert first.returncode == 0, first.stderr
    tenant.stored(running_service.client, "10.0.9.30")

    tenant.mock.clear()
    # The model answers with what only the recalled memory told it (issue 20: a used hit).
    tenant.mock.reply = lambda body: "The staging server answers on 10.0.9.30 now."
    second = tenant.claude(claude_bin, "Which IP address does the staging server have now?")
    assert second.returncode == 0, second.stderr
    text = _last_request_text(tenant)
    assert "10.0.9.30" in text  # only the recall can have put it there
    assert "Memories relevant to this prompt" in text
    assert text.count("SessionStart hook additional context: <nika-memory") <= 1
    assert text.count("UserPromptSubmit hook additional context: <nika-memory") == 1
    # The memory itself is injected once (SessionStart's digest and the prompt's recall never
    # carry the same memory; the previous session's handoff may quote the ask, as a handoff).
    assert text.count("] The staging server moved to 10.0.9.30") == 1
    # The Stop hook saw the reply use the injected memory: a useful label for that question.
    from nika_tui.tuning.relevance import load_set

    [label] = [j for j in load_set(tenant.tenant_id) if "staging server" in j.query]
    [fact_id] = label.useful
    assert fact_id[:8] in text and not label.not_useful

    # PALACE: an unrelated question gets no prompt recall at all.
    tenant.mock.clear()
    tenant.mock.reply = default_reply
    third = tenant.claude(claude_bin, "Write a haiku about autumn leaves for the release notes.")
    assert third.returncode == 0, third.stderr
    assert "Memories relevant to this prompt" not in _last_request_text(tenant)


def test_fill_is_what_the_cli_window_implies(
    claude_bin: Path, agent_tenant: Any, redis_client: Any
) -> None:
    tenant = agent_tenant(["claude-code"])
    tenant.mock.input_tokens = 150_000
    run = tenant.claude(claude_bin, "Summarise the architecture of this repository briefly.")
    assert run.returncode == 0, run.stderr
    request = tenant.mock.model_requests("/messages")[-1]
    # The CLI's own window: the 1M-context beta it sends for its default model, else 200k.
    one_m = "context-1m" in request.headers.get("anthropic-beta", "")
    window = 1_000_000 if one_m else 200_000
    # A hook records the fill; once, on a loaded machine, the record was not there yet right
    # after `claude -p` exited: wait for the record rather than assume it came first.
    wm = retry_until(
        lambda: read_working_memory(redis_client, tenant.tenant_id),
        timeout=30,
        interval=0.1,
        what="the working memory the Stop hook records",
    )
    assert wm.window == window
    assert wm.fill_percent == pytest.approx(100.0 * 150_000 / window, abs=0.01)


def test_newest_handoff_after_two_compactions_reaches_the_model_once(
    claude_bin: Path, agent_tenant: Any, redis_client: Any
) -> None:
    tenant = agent_tenant(["claude-code"])
    start = tenant.claude(claude_bin, "Task alpha: rename the billing module to invoicing.")
    assert start.returncode == 0, start.stderr
    session = _session_id(tenant)
    refused = tenant.claude(claude_bin, "/compact", resume=session)
    assert "Not enough messages" in refused.stdout + refused.stderr
    assert redis_client.xlen(redis_keys.compactions(tenant.tenant_id)) == 0

    tenant.claude(claude_bin, "Task alpha continues: update the imports too.", resume=session)
    assert tenant.claude(claude_bin, "/compact", resume=session).returncode == 0
    tenant.claude(claude_bin, "Task beta: move the CSV export to a worker queue.", resume=session)
    tenant.claude(claude_bin, "Task beta continues: add a retry on failure.", resume=session)
    assert tenant.claude(claude_bin, "/compact", resume=session).returncode == 0
    assert redis_client.xlen(redis_keys.compactions(tenant.tenant_id)) == 2

    tenant.mock.clear()
    after = tenant.claude(claude_bin, "Where were we with the export?", resume=session)
    assert after.returncode == 0, after.stderr
    text = _last_request_text(tenant)
    assert text.count(f"HANDOFF PACKET session {session}") == 1
    assert "Task beta continues: add a retry on failure." in text  # the newest packet's ask
    assert "last ask: Task alpha continues" not in text  # not the older packet


def _session_id(tenant: AgentTenant) -> str:
    starts = [e for e in tenant.hook_log() if e.get("event") == "SessionStart"]
    assert starts, "no SessionStart hook ran"
    return str(starts[-1]["session"])
