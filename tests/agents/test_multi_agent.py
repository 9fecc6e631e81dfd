"""Several agents, one memory (seed 2, « Une mémoire pour tous les agents »): the real Claude Code
then the real Codex on one tenant. What Claude learned reaches Codex's next session, and Codex
starts from the handoff Claude left when it stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.agents, pytest.mark.embedder, pytest.mark.slow]


def test_claude_learns_a_fact_and_codex_starts_from_its_handoff(
    claude_bin: Path, codex_bin: Path, agent_tenant: Any, running_service: Any
) -> None:
    tenant = agent_tenant(["claude-code", "codex"])
    fact = "Deploys to production now happen on Thursdays at 14:00, never on Fridays."
    learned = tenant.claude(claude_bin, fact)
    assert learned.returncode == 0, learned.stderr
    tenant.stored(running_service.client, "Thursdays at 14:00")
    # Claude stops mid-task (here: the session simply ends; quota or crash end it the same way).
    task = tenant.claude(claude_bin, "Start migrating the payments module to the new SDK.")
    assert task.returncode == 0, task.stderr

    tenant.mock.clear()
    asked = tenant.codex(codex_bin, "When do production deploys happen now?")
    assert asked.returncode == 0, asked.stderr
    [request, *_] = tenant.mock.model_requests("/responses")[-1:]
    text = request.text()
    # Claude's fact, once, as a memory: from Codex's prompt recall, or from nika's block of
    # Codex's AGENTS.md when the service's auto-memory sync (debounced, seconds after the
    # ingest) wrote it first (decision 464: the hooks then leave it out).
    fact = "Deploys to production now happen on Thursdays at 14:00"
    block = ""
    if "nika:memory begin" in text:
        block = text[text.index("nika:memory begin") : text.index("nika:memory end")]
    assert text.count(f"] {fact}") + block.count(fact) == 1
    assert "Handoff from the last session on this project" in text
    assert "(from claude-code" in text
    assert "Last ask: Start migrating the payments module to the new SDK." in text
