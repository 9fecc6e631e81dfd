"""The real Claude Code binary calls nika's MCP tools in a home nika's installer prepared.

No MCP config is written by the test: ``install_for_tenant`` (what ``nika kernel spawn`` runs)
registers ``nika mcp`` in the tenant's ``CLAUDE_CONFIG_DIR/.claude.json`` and allows its tools
in ``settings.json``; ``claude -p`` runs on that home as in a kernel (the tenant's environment:
``REDIS_URL``, nika's dirs). The model is scripted by :mod:`tests.agents.mcp_round_trip`:
thirteen calls over the eleven tools (remember, recall, correct, review resolve, timeline,
retire, review list, projects, digest, history, hierarchy status), each result checked as the
CLI sent it back to the model and each effect in the real memory service.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from nika_tui.services.agent_homes import claude_config_dir
from tests.agents.conftest import AgentTenant
from tests.agents.mcp_round_trip import (
    ANSWER,
    assert_full_round_trip,
    prepare_tenant,
    run_cli,
    scripted,
    summary,
)
from tests.agents.mock_anthropic_openai import MockModelServer
from tests.plugins.memory import RunningService

pytestmark = [pytest.mark.agents, pytest.mark.embedder, pytest.mark.slow]


def test_claude_code_uses_the_nika_tools_registered_by_the_installer(
    claude_bin: Path,
    mock_model: MockModelServer,
    running_service: RunningService,
    agent_tenant: Callable[..., AgentTenant],
) -> None:
    tenant = agent_tenant(["claude-code"])
    prepare_tenant(tenant.tenant_id)
    mock_model.reply = scripted(running_service, tenant.tenant_id)
    env = {
        **tenant.env,  # the kernel's: NIKA_TENANT_ID, REDIS_URL, nika's dirs
        "CLAUDE_CONFIG_DIR": str(claude_config_dir(tenant.tenant_id)),
        "ANTHROPIC_BASE_URL": mock_model.url,
        "ANTHROPIC_API_KEY": "sk-ant-test-not-a-secret",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    prompt = "Keep the team's memory of the billing project up to date."
    run = run_cli([str(claude_bin), "-p", prompt], tenant.project, env)

    assert run.returncode == 0, f"{run.stdout}{run.stderr}\n{summary(mock_model)}"
    bodies = [r.body for r in mock_model.model_requests("/messages")]
    assert_full_round_trip(running_service, bodies, tenant.tenant_id)
    assert ANSWER in run.stdout
