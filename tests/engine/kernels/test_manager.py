"""Kernels on a real tmux server (private socket) with the real embedded Redis.

The agent is the stand-in agent executable (``nika_tui.assets.standin_agent``) run as a
``shell``-type tenant's ``kernel.command``: it draws the same idle / working / question screens
the pane patterns look for and answers /compact and /exit like the real CLIs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis

from nika_tui.domain.compaction import CompactionAction
from nika_tui.domain.kernel_state import KernelState, KernelStatus, StateSource
from nika_tui.domain.tenant import AgentCli, AutoActions, AutoMode, KernelConfig, TenantConfig
from nika_tui.engine.kernels.manager import KernelManager
from nika_tui.engine.kernels.results import session_name
from nika_tui.errors import KernelError
from nika_tui.paths import tenant_data_dir
from nika_tui.services import confirmation_queue, kernel_store, redis_keys
from nika_tui.services.bus import open_bus
from nika_tui.services.config_store import save_tenant
from nika_tui.settings import Settings
from tests.helpers import retry_until

if TYPE_CHECKING:  # libtmux is imported by the tmux fixture at use (issue 12)
    import libtmux

pytestmark = pytest.mark.tmux

STANDIN = [sys.executable, "-m", "nika_tui.assets.standin_agent"]


def make_tenant(
    tenant_id: str,
    workdir: Path,
    command: list[str] | None = None,
    cli: AgentCli = AgentCli.SHELL,
    compact: AutoMode = AutoMode.ESCALATE,
    env: dict[str, str] | None = None,
) -> TenantConfig:
    config = TenantConfig(
        tenant_id=tenant_id,
        display_name=tenant_id.title(),
        agent_cli=cli,
        auto_actions=AutoActions(compact=compact),
        kernel=KernelConfig(
            workdir=str(workdir),
            command=STANDIN if command is None and cli is AgentCli.SHELL else command,
            env=env or {},
        ),
    )
    save_tenant(config)
    return config


@pytest.fixture
def manager(tmux_server: libtmux.Server, redis_client: redis.Redis) -> Iterator[KernelManager]:
    yield KernelManager(Settings.from_env(), redis_client=redis_client, stop_timeout_s=4.0)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def wait_state(manager: KernelManager, tenant_id: str, state: KernelState) -> KernelStatus:
    def probe() -> KernelStatus | None:
        status = manager.poll(tenant_id)
        return status if status is not None and status.state is state else None

    return retry_until(probe, what=f"{tenant_id} to be {state.value}")


def wait_screen(manager: KernelManager, tenant_id: str, text: str) -> str:
    def probe() -> str | None:
        screen = manager.capture(tenant_id, 200)
        return screen if text in screen else None

    return retry_until(probe, what=f"{text!r} on {tenant_id}'s pane")


def bus_kinds(tenant_id: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (line.data["kind"], line.data["body"])
        for line in open_bus(tenant_id).read()
        if line.data is not None
    ]


def proc_environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def test_spawn_runs_the_agent_in_its_own_session(
    manager: KernelManager, tmux_server: libtmux.Server, redis_client: redis.Redis, workdir: Path
) -> None:
    make_tenant("acme", workdir, env={"ACME_MODE": "dev"})
    result = manager.spawn("acme")
    assert result.spawned and result.session == "nika-tenant-acme"
    assert result.pid is not None
    assert [s.session_name for s in tmux_server.sessions] == ["nika-tenant-acme"]
    assert tmux_server.socket_name == os.environ["NIKA_TMUX_SOCKET"]

    env = proc_environ(result.pid)
    home = tenant_data_dir("acme") / "agent-home"
    assert env["NIKA_TENANT_ID"] == "acme"
    assert env["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] == "61"
    assert env["CLAUDE_CONFIG_DIR"] == str(home / "claude")
    assert env["CODEX_HOME"] == str(home / "codex")
    assert env["ACME_MODE"] == "dev"
    assert (home / "claude").stat().st_mode & 0o777 == 0o700
    assert Path(os.readlink(f"/proc/{result.pid}/cwd")) == workdir
    # the variables live in the tmux session environment, not in a shell string
    session = tmux_server.sessions.get(session_name="nika-tenant-acme")
    assert session is not None
    assert session.getenv("NIKA_TENANT_ID") == "acme"

    samples = kernel_store.pod_ttfl_samples(redis_client, "acme")
    assert len(samples) == 1 and samples[0] == pytest.approx(result.pod_ttfl_s, abs=1e-3)
    status = wait_state(manager, "acme", KernelState.IDLE)
    assert status.source is StateSource.PANE
    assert status.cli == "shell" and status.pid == result.pid and not status.stale
    spawn_event = {"action": "spawn", "session": "nika-tenant-acme", "cli": "shell",
                   "pid": result.pid, "pod_ttfl_s": result.pod_ttfl_s}  # fmt: skip
    assert ("kernel.event", spawn_event) in bus_kinds("acme")


def test_spawning_a_running_kernel_is_a_noop(manager: KernelManager, workdir: Path) -> None:
    make_tenant("acme", workdir)
    first = manager.spawn("acme")
    second = manager.spawn("acme")
    assert not second.spawned
    assert "already running" in second.message
    assert second.pid == first.pid
    assert len(manager.server.sessions) == 1


def test_pane_fallback_follows_the_agent(manager: KernelManager, workdir: Path) -> None:
    make_tenant("acme", workdir)
    manager.spawn("acme")
    wait_state(manager, "acme", KernelState.IDLE)
    manager.send_text("acme", "work")
    assert wait_state(manager, "acme", KernelState.WORKING).source is StateSource.PANE
    manager.send_text("acme", "done")
    wait_state(manager, "acme", KernelState.IDLE)
    manager.send_text("acme", "ask")
    assert wait_state(manager, "acme", KernelState.WAITING_INPUT).source is StateSource.PANE
    manager.send_text("acme", "1")
    wait_state(manager, "acme", KernelState.IDLE)


def test_a_fresh_hook_state_wins_over_the_pane(
    manager: KernelManager, redis_client: redis.Redis, workdir: Path
) -> None:
    make_tenant("acme", workdir)
    manager.spawn("acme")
    wait_state(manager, "acme", KernelState.IDLE)
    # the pane shows the idle prompt all along: the fresh hook state is what poll reports
    for event, payload, expected in [
        ("UserPromptSubmit", {}, KernelState.WORKING),
        ("Notification", {"notification_type": "permission_prompt"}, KernelState.WAITING_INPUT),
        ("Stop", {}, KernelState.IDLE),
        ("UserPromptSubmit", {}, KernelState.WORKING),
    ]:
        kernel_store.record_hook_event(redis_client, "acme", event, manager.now(), payload)
        status = manager.poll("acme")
        assert status is not None
        assert (status.state, status.source, status.last_event) == (
            expected,
            StateSource.HOOK,
            event,
        )
    manager.hook_fresh_s = 0.0  # the hook state is now too old: the pane decides again
    status = wait_state(manager, "acme", KernelState.IDLE)
    assert status.source is StateSource.PANE


def test_heartbeat_lapse_shows_stale_until_polled(
    redis_client: redis.Redis, tmux_server: libtmux.Server, workdir: Path
) -> None:
    manager = KernelManager(Settings.from_env(), redis_client=redis_client, heartbeat_ttl_s=0.3)
    make_tenant("acme", workdir)
    manager.spawn("acme")
    stale = retry_until(
        lambda: (s := manager.status("acme")) is not None and s.stale, what="stale kernel"
    )
    assert stale
    manager.heartbeat_ttl_s = 30.0  # a busy machine must not lapse the new beat before we read it
    status = manager.poll("acme")
    assert status is not None and not status.stale and status.heartbeat_age_s is not None


def test_stop_asks_the_agent_to_exit(
    manager: KernelManager, tmux_server: libtmux.Server, workdir: Path
) -> None:
    make_tenant("acme", workdir)
    manager.spawn("acme")
    result = manager.stop("acme")
    assert result.stopped and not result.forced
    assert not tmux_server.has_session("nika-tenant-acme")
    status = manager.status("acme")
    assert status is not None
    assert (status.state, status.source) == (KernelState.EXITED, StateSource.MANAGER)
    assert "exited on request" in status.reason
    assert status.heartbeat_age_s is None and not status.stale
    assert not manager.stop("acme").stopped  # nothing left to stop


def test_stop_kills_an_agent_that_does_not_exit(manager: KernelManager, workdir: Path) -> None:
    stubborn = [
        sys.executable,
        "-c",
        "import time; print('not listening', flush=True); time.sleep(600)",
    ]
    make_tenant("acme", workdir, command=stubborn)
    pid = manager.spawn("acme").pid
    assert pid is not None
    result = manager.stop("acme", timeout_s=0.5)
    assert result.stopped and result.forced
    retry_until(lambda: not Path(f"/proc/{pid}").exists(), what="the agent process to end")
    status = manager.status("acme")
    assert status is not None and status.state is KernelState.EXITED
    assert "killed" in status.reason


def test_restart_keeps_memory_and_starts_a_new_agent(
    manager: KernelManager, redis_client: redis.Redis, workdir: Path
) -> None:
    make_tenant("acme", workdir)
    first = manager.spawn("acme")
    redis_client.hset(redis_keys.review_queue("acme"), "r1", '{"pair": 1}')
    redis_client.hset(redis_keys.working_memory("acme"), "fill_percent", "40")
    result = manager.restart("acme")
    assert result.stop.stopped and result.spawn.spawned
    assert result.spawn.pid != first.pid
    assert "no SessionStart hook" in result.recall
    assert redis_client.hget(redis_keys.review_queue("acme"), "r1") == '{"pair": 1}'
    assert redis_client.hget(redis_keys.working_memory("acme"), "fill_percent") == "40"
    assert len(kernel_store.pod_ttfl_samples(redis_client, "acme")) == 2
    wait_state(manager, "acme", KernelState.IDLE)
    assert any(
        kind == "kernel.event" and body.get("action") == "restart"
        for kind, body in bus_kinds("acme")
    )


def test_a_foreign_session_with_the_name_is_never_touched(
    manager: KernelManager, tmux_server: libtmux.Server, workdir: Path
) -> None:
    make_tenant("acme", workdir)
    foreign = tmux_server.new_session(session_name="nika-tenant-acme", window_command="sleep 600")
    with pytest.raises(KernelError, match="not started by nika"):
        manager.spawn("acme")
    with pytest.raises(KernelError, match="not started by nika"):
        manager.stop("acme")
    manager.poll("acme")
    assert tmux_server.has_session("nika-tenant-acme")
    assert foreign.active_pane is not None and foreign.active_pane.pane_dead != "1"


def test_a_prefix_named_session_is_not_mistaken_for_the_kernel(
    manager: KernelManager, tmux_server: libtmux.Server, workdir: Path
) -> None:
    # tmux matches "-t name" by prefix: nika-tenant-ac must not address nika-tenant-acme.
    make_tenant("acme", workdir)
    make_tenant("ac", workdir)
    manager.spawn("acme")
    assert not manager.is_running("ac")
    result = manager.spawn("ac")
    assert result.spawned
    assert {s.session_name for s in tmux_server.sessions} == {"nika-tenant-acme", "nika-tenant-ac"}


def test_a_cli_that_exits_at_once_is_an_error_with_its_reason(
    manager: KernelManager, tmux_server: libtmux.Server, workdir: Path
) -> None:
    make_tenant("acme", workdir, command=[*STANDIN, "--exit-at-once", "3"])
    try:
        manager.spawn("acme")
    except KernelError as error:  # caught during the wait for the first line
        assert "exited at once" in error.message and "status 3" in error.message
    status = wait_state(manager, "acme", KernelState.ERROR)
    assert status.source is StateSource.MANAGER
    assert "status 3" in status.reason and "cannot start" in status.reason
    assert not tmux_server.has_session("nika-tenant-acme")


def test_a_missing_cli_names_the_install(
    manager: KernelManager, workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tmux = manager.server.tmux_bin
    assert tmux is not None
    (bin_dir / "tmux").symlink_to(tmux)
    monkeypatch.setenv("PATH", str(bin_dir))
    make_tenant("acme", workdir, cli=AgentCli.CODEX, command=None)
    with pytest.raises(KernelError) as caught:
        KernelManager(Settings.from_env(), redis_client=manager.redis).spawn("acme")
    assert "'codex' not found" in caught.value.message
    assert caught.value.hint == "npm install -g @openai/codex"
    make_tenant("beta", workdir, command=["/nonexistent/agent"])
    with pytest.raises(KernelError) as caught:
        manager.spawn("beta")
    assert "kernel.command" in caught.value.hint
    assert not manager.server.sessions


def test_the_command_is_an_argument_list_never_shell_text(
    manager: KernelManager, tmux_server: libtmux.Server, workdir: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    # shell metacharacters, and tmux's own command separator (an argument ending with ";")
    hostile = [f"; touch {marker}", f"$(touch {marker}2)", "x;", "kill-server", ";", "\\;"]
    make_tenant("acme", workdir, command=[*STANDIN, *hostile], env={"ACME_NOTE": "a;"})
    pid = manager.spawn("acme").pid
    assert pid is not None
    screen = wait_screen(manager, "acme", "argv:")
    assert repr(hostile) in screen.replace("\n", "")
    assert not marker.exists() and not Path(f"{marker}2").exists()
    assert tmux_server.has_session("nika-tenant-acme")  # no kill-server ran
    assert proc_environ(pid)["ACME_NOTE"] == "a;"
    manager.send_text("acme", "typed;")  # typed text goes through the same escaping
    wait_screen(manager, "acme", "echo: typed;")


def test_poll_marks_a_vanished_session_exited(
    manager: KernelManager, tmux_server: libtmux.Server, workdir: Path
) -> None:
    make_tenant("acme", workdir)
    manager.spawn("acme")
    tmux_server.kill_session("=nika-tenant-acme")
    status = manager.poll("acme")
    assert status is not None
    assert (status.state, status.source) == (KernelState.EXITED, StateSource.MANAGER)
    assert "gone" in status.reason


def test_agent_quitting_by_itself_is_exited(manager: KernelManager, workdir: Path) -> None:
    make_tenant("acme", workdir)
    manager.spawn("acme")
    manager.send_text("acme", "/exit")
    status = wait_state(manager, "acme", KernelState.EXITED)
    assert "status 0" in status.reason


def test_attach_command_targets_the_private_socket(manager: KernelManager) -> None:
    argv = manager.attach_command("acme")
    assert argv[1:] == [
        "-L",
        os.environ["NIKA_TMUX_SOCKET"],
        "attach-session",
        "-t",
        "=nika-tenant-acme",
    ]
    assert session_name("acme") == "nika-tenant-acme"


# --- the compaction policy, end to end with the stand-in agent ------------------------------
def _ping(manager: KernelManager, tenant_id: str, word: str) -> str:
    """Type a word and wait for its echo: every line typed before it has been handled.

    Returns the visible screen, where the stand-in's log shows each event once.
    """
    manager.send_text(tenant_id, word)
    wait_screen(manager, tenant_id, f"echo: {word}")
    return manager.screen(tenant_id)


def test_compaction_autonomous_types_the_compact_command(
    manager: KernelManager, redis_client: redis.Redis, workdir: Path
) -> None:
    make_tenant("acme", workdir, compact=AutoMode.AUTONOMOUS)
    manager.spawn("acme")
    wait_state(manager, "acme", KernelState.IDLE)
    below = manager.apply_compaction_policy("acme", 40.0)
    assert below.action is CompactionAction.NONE
    decision = manager.apply_compaction_policy("acme", 72.0)
    assert decision.action is CompactionAction.SEND_COMPACT and decision.command == "/compact"
    wait_screen(manager, "acme", "Conversation compacted")
    compactions = redis_client.xrange(redis_keys.compactions("acme"))
    assert [e[1]["trigger"] for e in compactions] == ["nika-autonomous"]
    wait_state(manager, "acme", KernelState.IDLE)
    again = manager.apply_compaction_policy("acme", 72.0)  # cooldown: not twice
    assert again.action is CompactionAction.NONE
    screen = _ping(manager, "acme", "after")
    assert screen.count("Conversation compacted") == 1
    assert not redis_client.hlen(redis_keys.confirmations("acme"))


def test_compaction_escalate_queues_one_confirmation(
    manager: KernelManager, redis_client: redis.Redis, workdir: Path
) -> None:
    make_tenant("acme", workdir, compact=AutoMode.ESCALATE)
    manager.spawn("acme")
    wait_state(manager, "acme", KernelState.IDLE)
    decision = manager.apply_compaction_policy("acme", 80.0)
    assert decision.action is CompactionAction.REQUEST_CONFIRMATION
    redis_client.hdel(redis_keys.kernel_state("acme"), "compact_requested_at")  # skip cooldown
    manager.apply_compaction_policy("acme", 81.0)
    items = redis_client.hvals(redis_keys.confirmations("acme"))
    assert len(items) == 1
    pending = confirmation_queue.pending_confirmation(redis_client, "acme", "compact")
    assert pending is not None and pending["status"] == "pending" and "80%" in pending["title"]
    assert ("confirmation.requested", pending) in bus_kinds("acme")
    screen = _ping(manager, "acme", "marker")
    assert "Conversation compacted" not in screen and "/compact" not in screen


def test_compaction_off_only_shows(
    manager: KernelManager, redis_client: redis.Redis, workdir: Path
) -> None:
    make_tenant("acme", workdir, compact=AutoMode.OFF)
    manager.spawn("acme")
    wait_state(manager, "acme", KernelState.IDLE)
    decision = manager.apply_compaction_policy("acme", 90.0)
    assert decision.action is CompactionAction.SHOW_ONLY
    screen = _ping(manager, "acme", "marker")
    assert "Conversation compacted" not in screen
    assert not redis_client.hlen(redis_keys.confirmations("acme"))
    assert not redis_client.exists(redis_keys.compactions("acme"))


def test_spawn_without_waiting_records_pod_ttfl_at_the_first_poll_with_output(
    manager: KernelManager, redis_client: redis.Redis, workdir: Path
) -> None:
    make_tenant("acme", workdir)
    result = manager.spawn("acme", wait=False)
    assert result.spawned and result.pod_ttfl_s is None
    samples = retry_until(
        lambda: (manager.poll("acme"), kernel_store.pod_ttfl_samples(redis_client, "acme"))[1],
        what="pod_ttfl recorded by poll",
    )
    assert len(samples) == 1 and samples[0] >= 0
    manager.poll("acme")
    assert len(kernel_store.pod_ttfl_samples(redis_client, "acme")) == 1  # once per spawn
