"""Stopping a kernel: ask its agents to exit (their exit command, then C-d), kill after a
timeout, stop what Codex leaves behind, release the cgroup and record the exit; a restart.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from nika_tui.domain.agent_cli_table import spec_for
from nika_tui.domain.kernel_state import KernelState
from nika_tui.domain.tenant_id import check_tenant_id
from nika_tui.engine.kernels.exit_handoff import hand_off_dead
from nika_tui.engine.kernels.results import RestartResult, StopResult, session_name
from nika_tui.errors import KernelError, NikaError
from nika_tui.services import kernel_launch, kernel_store
from nika_tui.services.config_store import load_tenant

if TYPE_CHECKING:
    from nika_tui.engine.kernels.manager import KernelManager
    from nika_tui.services.tmux_sessions import PaneInfo

EXIT_KEY_GAP_S = 0.4
"""Between two exit keys: a CLI that asks for a second Ctrl-D must have seen the first."""


def stop_kernel(
    manager: KernelManager, tenant_id: str, timeout_s: float | None = None
) -> StopResult:
    """Ask the agent to exit (its exit command, then C-d), then kill after a timeout.

    Returns:
        A :class:`StopResult` (``stopped`` is False when nothing was running).

    Raises:
        KernelError: the session with that name is not nika's.
    """
    check_tenant_id(tenant_id)
    name = session_name(tenant_id)
    timeout = manager.stop_timeout_s if timeout_s is None else timeout_s
    pane = manager.tmux.pane(name)
    if pane is None:
        manager.poll(tenant_id)  # records "exited" if Redis still thought it alive
        return StopResult(tenant_id, name, False, False, f"kernel {tenant_id} is not running")
    manager.check_owner(tenant_id, name, pane)
    cli = kernel_store.read_fields(manager.redis, tenant_id).get("cli") or "shell"
    spec = spec_for(cli)
    forced = False
    _stop_extra_windows(manager, name, timeout / 2)
    if not pane.dead:
        if spec.exit_keys:
            _press_exit_keys(manager, name, pane, spec.exit_keys, timeout / 4)
        elif spec.exit_command:
            manager.tmux.send_text(pane, spec.exit_command)
            # Codex's slash-command popup takes the first Enter: press it once more.
            if not manager.tmux.wait_dead(name, timeout / 4):
                manager.tmux.send_key(pane, "Enter")
        if not manager.tmux.wait_dead(name, timeout / 4):
            manager.tmux.send_key(pane, "C-d")
            forced = not manager.tmux.wait_dead(name, timeout / 2)
    manager.tmux.kill(name)
    if cli == "codex" or "codex" in _extra_clis(manager, tenant_id):
        _stop_codex_daemon(manager, tenant_id)
    from nika_tui.quota.enforce import release_kernel

    release_kernel(tenant_id, manager.settings)  # its cgroup goes with it
    how = f"killed after {timeout:g}s" if forced else "exited on request"
    kernel_store.end_kernel(
        manager.redis, tenant_id, KernelState.EXITED, manager.now(), event="stop",
        reason=f"stopped by nika ({how})",
    )  # fmt: skip
    body = {"action": "stop", "session": name, "forced": forced}
    manager.bus_event(tenant_id, "kernel.event", body)
    # An agent killed by the stop, or one that exits without SessionEnd, still hands off.
    hand_off_dead(manager, tenant_id, None, f"stopped by nika ({how})")
    return StopResult(tenant_id, name, True, forced, f"kernel {tenant_id} stopped ({how})")


def _press_exit_keys(
    manager: KernelManager, name: str, pane: PaneInfo, keys: tuple[str, ...], timeout: float
) -> None:
    """Press a CLI's exit keys one at a time, each once the CLI had time to take the last."""
    for key in keys:
        manager.tmux.send_key(pane, key)
        if manager.tmux.wait_dead(name, min(EXIT_KEY_GAP_S, timeout / len(keys))):
            return


def _extra_clis(manager: KernelManager, tenant_id: str) -> list[str]:
    try:
        return [c.value for c in load_tenant(tenant_id, manager.settings.roots).more_agent_clis]
    except NikaError:
        return []


def _stop_extra_windows(manager: KernelManager, name: str, timeout: float) -> None:
    """Ask the agents of the session's other windows to exit (the first one goes last)."""
    try:
        windows = manager.tmux.window_panes(name)
    except KernelError:
        return
    first = manager.tmux.pane(name)
    for window, info in windows.items():
        if info.dead or (first is not None and info.pane_id == first.pane_id):
            continue
        spec = spec_for(window)
        if spec.exit_keys:
            for key in spec.exit_keys:
                manager.tmux.send_key(info, key)
                time.sleep(EXIT_KEY_GAP_S)
        elif spec.exit_command:
            manager.tmux.send_text(info, spec.exit_command)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        live = [
            i
            for w, i in manager.tmux.window_panes(name).items()
            if not i.dead and (first is None or i.pane_id != first.pane_id)
        ]
        if not live:
            return
        for info in live:  # a slash-command popup may have taken the first Enter
            manager.tmux.send_key(info, "Enter")
        time.sleep(0.2)


def _stop_codex_daemon(manager: KernelManager, tenant_id: str) -> None:
    """Codex leaves an app-server daemon running after /quit: stop the tenant's own."""
    from nika_tui.services import codex_daemon
    from nika_tui.services.agent_homes import codex_home

    try:
        argv = kernel_launch.command_for(
            load_tenant(tenant_id, manager.settings.roots), manager.child_env
        )
    except NikaError:
        argv = []
    home = codex_home(tenant_id, manager.settings.roots)
    codex_daemon.stop_daemon(argv[0] if argv else None, home, manager.child_env)


def restart_kernel(manager: KernelManager, tenant_id: str) -> RestartResult:
    """Stop then spawn again. Memory is untouched (it lives in the stores, not the kernel).

    Recall is re-injected by the CLI's SessionStart hook where it has one (Claude Code);
    for the others the result says so, and recall stays available through MCP and
    ``nika memory recall``.
    """
    stopped = manager.stop(tenant_id)
    spawned = manager.spawn(tenant_id)
    cli = load_tenant(tenant_id, manager.settings.roots).agent_cli
    if spec_for(cli).session_start_hook:
        recall = "re-injected by the SessionStart hook"
    else:
        recall = (
            f"{cli.value} has no SessionStart hook: recall is available through the MCP "
            "tools and `nika memory recall`"
        )
    manager.bus_event(tenant_id, "kernel.event", {"action": "restart", "recall": recall})
    return RestartResult(stop=stopped, spawn=spawned, recall=recall)
