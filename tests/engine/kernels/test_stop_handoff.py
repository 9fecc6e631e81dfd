"""A kernel stopped by nika whose agent never ran SessionEnd still hands off: the stand-in
agent runs Claude Code's hooks from the kernel (tmux, private socket), takes a prompt and
exits on ``nika kernel stop`` without SessionEnd; the next session on the project gets the
packet, with the last ask its hook saw (the stand-in keeps no transcript)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import libtmux
import pytest

from nika_tui.domain.tenant import AgentCli, KernelConfig, TenantConfig
from nika_tui.engine.kernels.manager import KernelManager
from nika_tui.hooks.inject import HANDOFF_OTHER_TITLE
from nika_tui.services.config_store import save_tenant
from nika_tui.settings import Settings
from tests.helpers import retry_until

pytestmark = pytest.mark.tmux

ASK = "Rotate the staging TLS certificate of acme-api before Friday."


def test_a_stopped_kernel_without_session_end_leaves_a_handoff(
    tmux_server: libtmux.Server, redis_url: str, tmp_path: Path, isolated_env: dict[str, str]
) -> None:
    work = tmp_path / "acme-api"
    (work / ".git").mkdir(parents=True)
    agent = [sys.executable, "-m", "nika_tui.assets.standin_agent", "--claude-hooks"]
    save_tenant(
        TenantConfig(
            tenant_id="acme",
            display_name="Acme",
            agent_cli=AgentCli.CLAUDE_CODE,
            kernel=KernelConfig(workdir=str(work), command=agent),
        )
    )
    manager = KernelManager(Settings.from_env(), child_env=dict(os.environ))
    assert manager.spawn("acme").spawned
    manager.send_text("acme", ASK)
    retry_until(lambda: ASK in manager.screen("acme"), what="the prompt answered")
    log = Path(os.environ["NIKA_OS_DATA_DIR"]) / "logs" / "hooks.log"
    retry_until(
        lambda: log.exists() and '"event": "Stop"' in log.read_text(), what="the Stop hook ran"
    )

    assert manager.stop("acme", timeout_s=6).stopped
    assert '"event": "SessionEnd"' not in log.read_text()

    payload = {
        "session_id": "next-session",
        "transcript_path": "",
        "cwd": str(work),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    run = subprocess.run(
        [sys.executable, "-m", "nika_tui", "hook", "claude", "SessionStart"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env={**os.environ, "NIKA_TENANT_ID": "acme"},
        check=True,
    )
    assert run.stdout.strip(), "the next session was given no context"
    context = json.loads(run.stdout)["hookSpecificOutput"]["additionalContext"]
    assert f"## {HANDOFF_OTHER_TITLE}" in context
    assert f"Last ask: {ASK}" in context
    assert "stopped by nika" in context
