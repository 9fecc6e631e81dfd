"""The real Codex (``codex exec``) calls nika's MCP tools in a home nika's installer prepared.

No MCP config is written by the test: ``install_for_tenant`` (what ``nika kernel spawn`` runs)
merges ``[mcp_servers.nika]`` into the tenant's ``CODEX_HOME/config.toml`` (beside the mock
provider the test wrote first, as a user's own config would be). What Codex 0.171 needs from
that entry, found by running it (docs/mcp.md): ``required = true`` (``codex exec`` does not
wait for a server still starting), approved tools (``codex exec`` never asks: an unapproved
call fails), and ``env_vars`` naming ``REDIS_URL`` (Codex passes a server only a whitelist of
the environment). ``--strict-config``: a key this Codex does not know fails the run.

Same script as Claude Code's test (:mod:`tests.agents.mcp_round_trip`), same assertions, plus:
the nika tools are offered from the first request on.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from nika_tui.services.agent_homes import codex_home
from tests.agents.conftest import AgentTenant
from tests.agents.mcp_round_trip import (
    ALL_TOOLS,
    ANSWER,
    assert_full_round_trip,
    prepare_tenant,
    run_cli,
    scripted,
    summary,
)
from tests.agents.mock_anthropic_openai import MockModelServer, tools_offered
from tests.plugins.memory import RunningService

pytestmark = [pytest.mark.agents, pytest.mark.embedder, pytest.mark.slow]


def test_codex_uses_the_nika_tools_registered_by_the_installer(
    codex_bin: Path,
    mock_model: MockModelServer,
    running_service: RunningService,
    agent_tenant: Callable[..., AgentTenant],
) -> None:
    tenant = agent_tenant(["codex"])
    prepare_tenant(tenant.tenant_id)
    mock_model.reply = scripted(running_service, tenant.tenant_id)
    env = {**tenant.env, "CODEX_HOME": str(codex_home(tenant.tenant_id)), "MOCK_API_KEY": "x"}
    prompt = "Keep the team's memory of the billing project up to date."
    run = run_cli([str(codex_bin), "exec", "--strict-config", prompt], tenant.project, env)

    assert run.returncode == 0, f"{run.stdout}{run.stderr}\n{summary(mock_model)}"
    first = mock_model.model_requests("/responses")[0]
    # Offered from the first request on: the run waited for the required server.
    assert {f"mcp__nika__{tool}" for tool in ALL_TOOLS} <= set(tools_offered(first.body))
    bodies = [r.body for r in mock_model.model_requests("/responses")]
    assert_full_round_trip(running_service, bodies, tenant.tenant_id)
    assert ANSWER in run.stdout
