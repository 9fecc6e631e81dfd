"""The kernel path with the real binaries: ``nika kernel spawn`` of a tenant runs the CLI
interactively in tmux (private socket), its hooks live, and ``nika kernel stop`` ends it
cleanly (Codex: no app-server daemon of the tenant left behind). For Claude Code, a fact typed
in the kernel's pane is stored (the memory service recalls it) and the kernel's fill shows on
the dashboard as the CLI's own window implies."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from nika_tui.dashboard.model import FillView
from nika_tui.dashboard.redis_source import RedisDashboardSource
from nika_tui.domain.tenant import AgentCli, KernelConfig
from nika_tui.engine.kernels.manager import KernelManager
from nika_tui.services.agent_homes import codex_home
from nika_tui.services.codex_daemon import daemon_pids
from nika_tui.services.config_store import load_tenant, save_tenant
from nika_tui.settings import Settings
from tests.agents.claude_onboarding import onboarded_claude
from tests.agents.headless import stored_fact
from tests.helpers import retry_until
from tests.plugins.memory import RunningService

pytestmark = [pytest.mark.agents, pytest.mark.tmux]


def test_codex_kernel_starts_without_prompts_runs_hooks_and_stops_cleanly(
    codex_bin: Path, agent_tenant: Any, tmux_server: Any, redis_client: Any
) -> None:
    tenant = agent_tenant(["codex"])
    config = load_tenant(tenant.tenant_id)
    save_tenant(
        config.model_copy(
            update={
                "kernel": KernelConfig(
                    workdir=str(tenant.project),
                    command=[str(codex_bin)],
                    env={"MOCK_API_KEY": "not-a-secret", "HOME": str(tenant.home)},
                    trust_codex_hooks=True,
                )
            }
        )
    )
    manager = KernelManager(
        Settings.from_env(tenant.env), child_env=tenant.env, redis_client=redis_client
    )
    spawned = manager.spawn(tenant.tenant_id)
    assert spawned.spawned, spawned.message
    try:
        screen = retry_until(
            lambda: (s := manager.screen(tenant.tenant_id)) and "Ask Codex" in s and s,
            timeout=60,
            what="Codex's prompt in the kernel pane",
        )
        assert "Trust this folder" not in screen and "Hooks need review" not in screen
        manager.send_text(tenant.tenant_id, "The staging server moved to 10.0.9.30.")
        retry_until(
            lambda: (
                {"SessionStart", "UserPromptSubmit"}
                <= {e["event"] for e in tenant.hook_log() if e.get("cli") == "codex"}
            ),
            timeout=60,
            what="Codex's SessionStart and UserPromptSubmit hooks from the kernel",
        )
    finally:
        stopped = manager.stop(tenant.tenant_id, timeout_s=12)
    assert stopped.stopped and not stopped.forced, stopped.message
    assert daemon_pids(codex_home(tenant.tenant_id)) == []


@pytest.mark.embedder
def test_claude_code_kernel_stores_a_typed_fact_reports_its_fill_and_stops_cleanly(
    claude_bin: Path,
    agent_tenant: Any,
    tmux_server: Any,
    redis_client: Any,
    running_service: RunningService,
) -> None:
    tenant = agent_tenant(["claude-code"])
    tenant.mock.input_tokens = 150_000  # what each answer's usage reports: the context's size
    settings = onboarded_claude(tenant)
    config = load_tenant(tenant.tenant_id)
    save_tenant(
        config.model_copy(
            update={
                "kernel": KernelConfig(
                    workdir=str(tenant.project),
                    command=[str(claude_bin)],
                    env={
                        "ANTHROPIC_BASE_URL": tenant.mock.url,
                        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                        "HOME": str(tenant.home),
                    },
                )
            }
        )
    )
    manager = KernelManager(
        Settings.from_env(tenant.env), child_env=tenant.env, redis_client=redis_client
    )
    spawned = manager.spawn(tenant.tenant_id)
    assert spawned.spawned, spawned.message
    try:
        retry_until(
            lambda: "for shortcuts" in manager.screen(tenant.tenant_id),
            timeout=60,
            what="Claude Code's prompt in the kernel pane",
        )
        assert "hook claude SessionStart" in json.dumps(settings)  # installed by the spawn
        manager.send_text(tenant.tenant_id, "The staging server moved to 10.0.9.30.")
        retry_until(
            lambda: (
                {"SessionStart", "UserPromptSubmit", "Stop"}
                <= {e["event"] for e in tenant.hook_log() if e.get("cli") == "claude"}
            ),
            timeout=60,
            what="Claude Code's hooks from the kernel",
        )
        asked = [r for r in tenant.mock.model_requests("/messages") if "10.0.9.30" in r.text()]
        assert asked
        # The typed fact reached the memory service from the kernel: recall finds it.
        stored = stored_fact(running_service, tenant.tenant_id, "10.0.9.30")
        assert stored.meta.agent_type == "claude-code"
        assert stored.meta.tmux == f"nika-tenant-{tenant.tenant_id}"
        # The kernel's fill, as the dashboard shows it: the CLI's own window arithmetic.
        one_m = "context-1m" in asked[-1].headers.get("anthropic-beta", "")
        window = 1_000_000 if one_m else 200_000
        # Read once: Stop's log line (waited for above) is written after its fill reading, which
        # waits for the closing message Claude Code may append after running Stop.
        fill = _dashboard_fill(tenant)
        assert (fill.tokens, fill.window) == (150_000, window)
        assert fill.percent == pytest.approx(100.0 * 150_000 / window, abs=0.01)
    finally:
        stopped = manager.stop(tenant.tenant_id, timeout_s=12)
    assert stopped.stopped and not stopped.forced, stopped.message


def _dashboard_fill(tenant: Any) -> FillView:
    """The tenant's fill in the dashboard's snapshot (its overview row)."""
    snapshot = RedisDashboardSource(Settings.from_env(tenant.env)).snapshot(datetime.now(UTC))
    row = snapshot.row(tenant.tenant_id)
    assert row is not None, snapshot
    return row.fill


def test_two_agents_of_one_tenant_run_in_one_kernel_a_window_each(
    claude_bin: Path, codex_bin: Path, agent_tenant: Any, tmux_server: Any, redis_client: Any
) -> None:
    tenant = agent_tenant(["claude-code", "codex"])
    onboarded_claude(tenant)
    config = load_tenant(tenant.tenant_id)
    path = os.pathsep.join([str(codex_bin.parent), str(claude_bin.parent), os.environ["PATH"]])
    save_tenant(
        config.model_copy(
            update={
                "agent_cli": AgentCli.CLAUDE_CODE,
                "more_agent_clis": [AgentCli.CODEX],
                "kernel": KernelConfig(
                    workdir=str(tenant.project),
                    command=[str(claude_bin)],
                    env={
                        "PATH": path,
                        "HOME": str(tenant.home),
                        "ANTHROPIC_BASE_URL": tenant.mock.url,
                        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                        "MOCK_API_KEY": "not-a-secret",
                    },
                    trust_codex_hooks=True,
                ),
            }
        )
    )
    manager = KernelManager(
        Settings.from_env(tenant.env), child_env=tenant.env, redis_client=redis_client
    )
    assert manager.spawn(tenant.tenant_id).spawned
    try:
        windows = manager.tmux.window_panes(f"nika-tenant-{tenant.tenant_id}")
        assert len(windows) == 2 and "codex" in windows
        codex_pane = windows["codex"]
        retry_until(
            lambda: "Ask Codex" in manager.tmux.visible(codex_pane),
            timeout=60,
            what="Codex's prompt in its window",
        )
        retry_until(
            lambda: "for shortcuts" in manager.screen(tenant.tenant_id),
            timeout=60,
            what="Claude Code's prompt in the first window",
        )
    finally:
        stopped = manager.stop(tenant.tenant_id, timeout_s=12)
    assert stopped.stopped and not stopped.forced, stopped.message
    assert daemon_pids(codex_home(tenant.tenant_id)) == []
