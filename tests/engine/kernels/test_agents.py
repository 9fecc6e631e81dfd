"""One kernel, two agent windows (issue #13): each agent's own state, screen and attach.

A private tmux socket and the embedded Redis; both agents are the stand-in agent: the first
window runs it as the ``shell`` tenant's command, the second is found on the kernel's PATH as
``codex`` (a two-line script that starts the stand-in), so the second window is classified
with Codex's pane patterns as a real Codex window would be.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis

from nika_tui.cli import main
from nika_tui.domain.compaction import CompactionAction
from nika_tui.domain.kernel_state import KernelState, KernelStatus
from nika_tui.domain.tenant import AgentCli, AutoActions, AutoMode, KernelConfig, TenantConfig
from nika_tui.engine.kernel_watch import KernelWatcher
from nika_tui.engine.kernels.confirmations import resolve
from nika_tui.engine.kernels.manager import KernelManager
from nika_tui.errors import KernelError
from nika_tui.services import confirmation_queue, kernel_store, wm_store
from nika_tui.services.config_store import load_tenant, save_tenant
from nika_tui.services.transcripts.common import ContextFill, TranscriptFormat
from nika_tui.settings import Settings
from tests.helpers import retry_until

if TYPE_CHECKING:  # libtmux is imported by the tmux fixture at use (issue 12)
    import libtmux

pytestmark = pytest.mark.tmux

STANDIN = [sys.executable, "-m", "nika_tui.assets.standin_agent"]
SESSION = "nika-tenant-duo"


@pytest.fixture
def manager(tmux_server: libtmux.Server, redis_client: redis.Redis) -> KernelManager:
    return KernelManager(Settings.from_env(), redis_client=redis_client, stop_timeout_s=4.0)


@pytest.fixture
def duo(tmp_path: Path, tmux_server: libtmux.Server, manager: KernelManager) -> str:
    """A spawned tenant ``duo``: the stand-in in window ``shell``, a stand-in ``codex`` beside."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    codex = bin_dir / "codex"
    codex.write_text(f'#!/bin/sh\nexec {sys.executable} -m nika_tui.assets.standin_agent "$@"\n')
    codex.chmod(0o700)
    workdir = tmp_path / "work"
    workdir.mkdir()
    save_tenant(
        TenantConfig(
            tenant_id="duo",
            display_name="Duo",
            agent_cli=AgentCli.SHELL,
            more_agent_clis=[AgentCli.CODEX],
            kernel=KernelConfig(
                workdir=str(workdir),
                command=STANDIN,
                env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
            ),
        )
    )
    assert manager.spawn("duo").spawned
    return "duo"


def agent_states(status: KernelStatus | None) -> dict[str, KernelState]:
    return {} if status is None else {a.agent: a.state for a in status.agents}


def wait_agents(manager: KernelManager, tenant_id: str, **want: KernelState) -> KernelStatus:
    """Poll until each named agent (``codex=…``, ``shell=…``) is in the state given."""

    def probe() -> KernelStatus | None:
        status = manager.poll(tenant_id)
        states = agent_states(status)
        return status if all(states.get(a) is s for a, s in want.items()) else None

    return retry_until(probe, what=f"{tenant_id}'s agents to be {want}")


def type_into(manager: KernelManager, agent: str, text: str) -> None:
    manager.tmux.send_text(manager.tmux.window_panes(SESSION)[agent], text)


def test_each_agent_window_has_its_own_state_and_the_kernel_combines_them(
    manager: KernelManager, duo: str
) -> None:
    assert list(manager.tmux.window_panes(SESSION)) == ["shell", "codex"]
    status = wait_agents(manager, duo, shell=KernelState.IDLE, codex=KernelState.IDLE)
    assert status.state is KernelState.IDLE
    assert [a.agent for a in status.agents] == ["shell", "codex"]

    type_into(manager, "codex", "work")
    status = wait_agents(manager, duo, shell=KernelState.IDLE, codex=KernelState.WORKING)
    assert status.state is KernelState.WORKING  # working if any agent works

    type_into(manager, "shell", "ask")
    status = wait_agents(manager, duo, shell=KernelState.WAITING_INPUT, codex=KernelState.WORKING)
    assert status.state is KernelState.WAITING_INPUT  # a person is needed: that comes first

    # Each agent's own screen: the question on the first window, the spinner on codex's.
    assert "Do you want to proceed?" in manager.screen(duo)
    assert "Working…" not in manager.screen(duo)
    assert "Working…" in manager.screen(duo, "codex")
    assert "Do you want to proceed?" not in manager.capture(duo, 200, agent="codex")


def test_the_kernel_exits_only_when_every_agent_window_is_dead(
    manager: KernelManager, duo: str, tmux_server: libtmux.Server
) -> None:
    wait_agents(manager, duo, shell=KernelState.IDLE, codex=KernelState.IDLE)
    type_into(manager, "shell", "/exit")  # the first window goes first: codex lives on
    status = wait_agents(manager, duo, shell=KernelState.EXITED, codex=KernelState.IDLE)
    assert status.state is KernelState.IDLE and not status.stale
    assert "exited with status 0" in status.agents[0].reason
    assert tmux_server.has_session(SESSION) and manager.is_running(duo)
    assert manager.spawn(duo).spawned is False  # a live agent is never replaced

    type_into(manager, "codex", "/exit")
    status = retry_until(
        lambda: (s := manager.poll(duo)) is not None and s.state is KernelState.EXITED and s,
        what="the kernel to exit once both agents have",
    )
    assert agent_states(status) == {"shell": KernelState.EXITED, "codex": KernelState.EXITED}
    assert not tmux_server.has_session(SESSION)


def test_a_hook_moves_its_own_agent_only(
    manager: KernelManager, duo: str, redis_client: redis.Redis
) -> None:
    wait_agents(manager, duo, shell=KernelState.IDLE, codex=KernelState.IDLE)
    now = manager.now()
    state = kernel_store.record_hook_event(
        redis_client, duo, "UserPromptSubmit", now, agent="codex"
    )
    assert state is KernelState.WORKING
    status = manager.poll(duo)  # the pane says idle, but a fresh hook wins for its agent
    assert status is not None and status.state is KernelState.WORKING
    assert agent_states(status) == {"shell": KernelState.IDLE, "codex": KernelState.WORKING}
    assert status.agents[1].source.value == "hook" and status.agents[0].source.value == "pane"

    kernel_store.record_hook_event(redis_client, duo, "Stop", now, agent="codex")
    status = manager.poll(duo)
    assert status is not None and status.state is KernelState.IDLE


def shown_window(manager: KernelManager, argv: list[str]) -> str:
    """Run what attach runs before handing the terminal over; the window the session shows."""
    split = argv.index(";")
    assert argv[split + 1 :] == ["attach-session", "-t", f"={SESSION}"]
    subprocess.run(argv[:split], check=True)
    return manager.tmux.cmd("display-message", "-p", "-t", f"={SESSION}:", "#{window_name}")[0]


def test_attach_with_agent_selects_that_agents_window(
    manager: KernelManager, duo: str, tmux_server: libtmux.Server
) -> None:
    wait_agents(manager, duo, shell=KernelState.IDLE, codex=KernelState.IDLE)
    target = manager.attach_target(duo, "codex")
    assert (target.agent, target.why) == ("codex", "asked for")
    assert shown_window(manager, target.command) == "codex"

    with pytest.raises(KernelError) as error:
        manager.attach_command(duo, "gemini-cli")
    assert "its agents: shell, codex" in (error.value.hint or "")


def test_attach_by_default_shows_the_busiest_agent_else_the_first(
    manager: KernelManager, duo: str
) -> None:
    wait_agents(manager, duo, shell=KernelState.IDLE, codex=KernelState.IDLE)
    manager.tmux.cmd("select-window", "-t", f"={SESSION}:codex")  # left on codex by someone
    target = manager.attach_target(duo)
    assert (target.agent, target.why) == ("shell", "the first live window (no agent busier)")
    assert shown_window(manager, target.command) == "shell"

    type_into(manager, "codex", "work")
    wait_agents(manager, duo, shell=KernelState.IDLE, codex=KernelState.WORKING)
    target = manager.attach_target(duo)
    assert (target.agent, target.why) == ("codex", "the busiest (working)")
    assert shown_window(manager, target.command) == "codex"

    type_into(manager, "shell", "ask")  # waiting for a person beats working
    wait_agents(manager, duo, shell=KernelState.WAITING_INPUT, codex=KernelState.WORKING)
    target = manager.attach_target(duo)
    assert (target.agent, target.why) == ("shell", "the busiest (waiting-input)")
    assert shown_window(manager, target.command) == "shell"


def test_kernel_list_json_shows_each_agents_state(
    manager: KernelManager, duo: str, capsys: pytest.CaptureFixture[str]
) -> None:
    type_into(manager, "codex", "work")

    def listed() -> dict[str, Any] | None:
        assert main(["kernel", "list", "--json"]) == 0
        rows = json.loads(capsys.readouterr().out)
        row = next(r for r in rows if r["tenant_id"] == duo)
        states = {a["agent"]: a["state"] for a in row["agents"]}
        return row if states == {"shell": "idle", "codex": "working"} else None

    row = retry_until(listed, what="both agents' states in `nika kernel list --json`")
    assert row["state"] == "working"
    assert main(["kernel", "attach", duo, "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert (said["agent"], said["why"]) == ("codex", "the busiest (working)")
    assert main(["kernel", "attach", duo, "--agent", "shell", "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["agent"] == "shell" and "select-window" in said["command"]


# --- sends and the 61% policy act on the named agent's window -------------------------------
def _set_compact_mode(tenant_id: str, mode: AutoMode) -> None:
    config = load_tenant(tenant_id)
    save_tenant(config.model_copy(update={"auto_actions": AutoActions(compact=mode)}))


def _fill(client: redis.Redis, tenant_id: str, agent: str, percent: float) -> None:
    fill = ContextFill(
        fill_percent=percent,
        tokens=int(percent * 2000),
        window=200_000,
        format=next(iter(TranscriptFormat)),
    )
    wm_store.record_fill(client, tenant_id, fill, "t.jsonl", datetime.now(UTC), agent=agent)


def test_send_text_types_into_the_named_agent_window(manager: KernelManager, duo: str) -> None:
    wait_agents(manager, duo, shell=KernelState.IDLE, codex=KernelState.IDLE)
    manager.send_text(duo, "to-codex", agent="codex")
    retry_until(lambda: "echo: to-codex" in manager.screen(duo, "codex"), what="codex echo")
    manager.send_text(duo, "to-first")  # no agent named: the first window
    retry_until(lambda: "echo: to-first" in manager.screen(duo), what="first window echo")
    assert "to-codex" not in manager.capture(duo, 200)
    assert "to-first" not in manager.capture(duo, 200, agent="codex")
    with pytest.raises(KernelError, match="no gemini-cli window"):
        manager.send_text(duo, "lost", agent="gemini-cli")


def test_the_watcher_compacts_the_agent_past_61_percent_only(
    manager: KernelManager, duo: str, redis_client: redis.Redis, isolated_env: dict[str, str]
) -> None:
    _set_compact_mode(duo, AutoMode.AUTONOMOUS)
    wait_agents(manager, duo, shell=KernelState.IDLE, codex=KernelState.IDLE)
    _fill(redis_client, duo, "codex", 72.0)
    _fill(redis_client, duo, "shell", 20.0)  # the tenant's latest reading: the cool agent's
    watcher = KernelWatcher(Settings.from_env(), interval_s=0.1)

    assert watcher.tick() == [duo]

    retry_until(
        lambda: "Conversation compacted" in manager.screen(duo, "codex"), what="codex compacted"
    )
    assert "Conversation compacted" not in manager.capture(duo, 200)
    assert kernel_store.compact_requested_at(redis_client, duo, "codex") is not None
    assert kernel_store.compact_requested_at(redis_client, duo, "shell") is None


def test_an_escalated_compaction_names_its_agent_and_approving_compacts_that_window(
    manager: KernelManager, duo: str, redis_client: redis.Redis, isolated_env: dict[str, str]
) -> None:
    _set_compact_mode(duo, AutoMode.ESCALATE)
    wait_agents(manager, duo, shell=KernelState.IDLE, codex=KernelState.IDLE)
    decision = manager.apply_compaction_policy(duo, 80.0, agent="codex")
    assert decision.action is CompactionAction.REQUEST_CONFIRMATION
    # The first window's own confirmation is a different one: both wait, one each.
    manager.apply_compaction_policy(duo, 75.0)
    pending = confirmation_queue.pending_confirmations(redis_client, duo, "compact")
    assert sorted(str(p.get("agent", "")) for p in pending) == ["", "codex"]
    mine = next(p for p in pending if p.get("agent") == "codex")
    assert "codex" in mine["title"]

    result = resolve(redis_client, duo, mine["id"], approve=True, settings=Settings.from_env())

    assert result["status"] == "approved"
    retry_until(
        lambda: "Conversation compacted" in manager.screen(duo, "codex"), what="codex compacted"
    )
    assert "Conversation compacted" not in manager.capture(duo, 200)
