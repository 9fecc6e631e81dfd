"""The real Codex (``codex exec``) with nika's hooks, against the mock OpenAI Responses server.

Codex runs no ``hooks.json`` hook until it is trusted; nika writes the trust entries only with
the tenant's consent, computed as Codex computes them: the proof is Codex running them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nika_tui.engine.kernels.hook_install import install_for_tenant
from nika_tui.paths import roots
from nika_tui.services.agent_settings import CODEX_EVENTS, codex_trust_report
from nika_tui.services.codex_trust import event_label
from nika_tui.services.config_store import load_tenant, save_tenant
from tests.agents.conftest import AgentTenant

pytestmark = [pytest.mark.agents]

FACT = "The staging server moved to 10.0.9.30 last week, use that address from now on."


def _events(tenant: AgentTenant) -> set[str]:
    return {e["event"] for e in tenant.hook_log() if e.get("cli") == "codex"}


def test_hooks_run_only_once_the_tenant_consented_to_trust_them(
    codex_bin: Path, agent_tenant: Any
) -> None:
    tenant = agent_tenant(["codex"], trust_codex=False)
    report = codex_trust_report(tenant.tenant_id)
    assert sorted(report.untrusted) == sorted(event_label(e) for e in CODEX_EVENTS)
    run = tenant.codex(codex_bin, "List the files of this project, briefly please.")
    assert run.returncode == 0, run.stderr
    assert _events(tenant) <= {"notify"}  # Codex skipped every untrusted hook, silently

    config = load_tenant(tenant.tenant_id)
    consented = config.model_copy(
        update={"kernel": config.kernel.model_copy(update={"trust_codex_hooks": True})}
    )
    save_tenant(consented)
    install_for_tenant(consented, roots())
    assert codex_trust_report(tenant.tenant_id).ok
    run = tenant.codex(codex_bin, "List the files of this project, briefly please.")
    assert run.returncode == 0, run.stderr
    assert {"SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"} <= _events(tenant)
    # [features].hooks, not the deprecated codex_hooks (Codex warns on each run otherwise),
    # and the workdir is trusted (no "Trust this folder?").
    assert "codex_hooks" not in run.stderr
    assert "Hooks need review" not in run.stdout + run.stderr


@pytest.mark.embedder
@pytest.mark.slow
def test_a_fact_reaches_the_next_codex_session_with_the_last_ask(
    codex_bin: Path, agent_tenant: Any, running_service: Any
) -> None:
    tenant = agent_tenant(["codex"])
    first = tenant.codex(codex_bin, FACT)
    assert first.returncode == 0, first.stderr
    tenant.stored(running_service.client, "10.0.9.30")

    tenant.mock.clear()
    second = tenant.codex(codex_bin, "Which IP address does the staging server have now?")
    assert second.returncode == 0, second.stderr
    requests = tenant.mock.model_requests("/responses")
    assert requests
    text = requests[-1].text()
    # The previous session's handoff was read from a current-format rollout: it has the ask.
    assert "Last ask: The staging server moved to 10.0.9.30" in text
    # The fact itself once as a memory: from the prompt's recall, or from nika's block of
    # AGENTS.md when the service's auto-memory sync (debounced, seconds after the ingest) wrote
    # it before this session (decision 464: the hooks then leave it out). Never both.
    fact = "The staging server moved to 10.0.9.30"
    recalled = text.count(f"] {fact}")
    block = ""
    if "nika:memory begin" in text:
        block = text[text.index("nika:memory begin") : text.index("nika:memory end")]
    assert recalled + block.count(fact) == 1
    if recalled:
        assert "Memories relevant to this prompt" in text
    assert text.count("<nika-memory") == text.count("</nika-memory>") <= 2
