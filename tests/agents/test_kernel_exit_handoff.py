"""An agent that dies mid-task still hands off: the real Claude Code runs in a kernel (tmux,
private socket), takes a prompt, and is killed (as a crash or an out-of-memory kill ends it:
no SessionEnd, no PreCompact). The kernel watcher sees the dead pane and publishes the
session's handoff packet from its transcript; the next session on the project — a new
``claude -p``, or the tenant's other agent, a new ``codex exec`` (issue 13: "when one agent
stops mid-task (quota, crash), the other starts from the handoff") — gets it in its model
request, once.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from nika_tui.domain.kernel_state import KernelState
from nika_tui.domain.tenant import KernelConfig
from nika_tui.engine.kernel_watch import KernelWatcher
from nika_tui.hooks.inject import HANDOFF_OTHER_TITLE
from nika_tui.services.config_store import load_tenant, save_tenant
from nika_tui.settings import Settings
from tests.agents.claude_onboarding import onboarded_claude
from tests.helpers import retry_until

pytestmark = [pytest.mark.agents, pytest.mark.tmux]

ASK = "Move the staging server of acme-shop to 10.0.9.30 and update the deploy notes."


@pytest.mark.parametrize("next_cli", ["claude-code", "codex"])
def test_a_killed_claude_code_kernel_leaves_a_handoff_for_the_next_session(
    next_cli: str,
    claude_bin: Path,
    agent_tenant: Any,
    tmux_server: Any,
    redis_client: Any,
    request: pytest.FixtureRequest,
) -> None:
    # Codex's hooks installed (and trusted) first; the saved config is Claude Code's kernel.
    tenant = agent_tenant(["codex", "claude-code"] if next_cli == "codex" else ["claude-code"])
    onboarded_claude(tenant)
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
    watcher = KernelWatcher(Settings.from_env(tenant.env), tenant.env)
    manager = watcher.manager
    assert manager.spawn(tenant.tenant_id).spawned
    try:
        retry_until(
            lambda: "for shortcuts" in manager.screen(tenant.tenant_id),
            timeout=60,
            what="Claude Code's prompt in the kernel pane",
        )
        manager.send_text(tenant.tenant_id, ASK)
        retry_until(
            lambda: "Stop" in {e["event"] for e in tenant.hook_log() if e.get("cli") == "claude"},
            timeout=60,
            what="the turn's Stop hook",
        )
        pid = manager.tmux.pane_agent_pid(manager.tmux.pane(f"nika-tenant-{tenant.tenant_id}"))
        assert pid is not None
        os.kill(pid, signal.SIGKILL)  # no SessionEnd: the process is gone at once

        retry_until(
            lambda: (
                watcher.tick() is not None
                and (s := manager.status(tenant.tenant_id)) is not None
                and s.state in (KernelState.ERROR, KernelState.EXITED)
            ),
            timeout=30,
            what="the watcher sees the agent dead",
        )
    finally:
        if manager.is_running(tenant.tenant_id):
            manager.stop(tenant.tenant_id, timeout_s=12)
    assert not any(e["event"] == "SessionEnd" for e in tenant.hook_log())

    if next_cli == "codex":
        tenant.mock.clear()
        run = tenant.codex(request.getfixturevalue("codex_bin"), "Where did we leave off?")
        assert run.returncode == 0, run.stderr
        requests = [r.text() for r in tenant.mock.model_requests("/responses")]
    else:
        before = len(tenant.mock.model_requests("/messages"))
        run = tenant.claude(claude_bin, "Where did we leave off?")
        assert run.returncode == 0, run.stderr
        requests = [r.text() for r in tenant.mock.model_requests("/messages")[before:]]
    given = [t for t in requests if f"## {HANDOFF_OTHER_TITLE}" in t]
    assert given, "the new session's model request has no handoff"
    assert all(t.count(f"## {HANDOFF_OTHER_TITLE}") == 1 for t in given)  # once
    packet = given[0][given[0].index(HANDOFF_OTHER_TITLE) :][:1500]
    assert "ended without SessionEnd" in packet and "status 137" in packet, packet
    assert "10.0.9.30" in given[0]  # the last ask, from the killed session's transcript
