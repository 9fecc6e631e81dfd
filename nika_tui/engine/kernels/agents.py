"""Several agents in one kernel: one tmux window per agent CLI, each watched on its own.

The first window runs the tenant's ``agent_cli`` (whatever tmux calls it: sessions made
before the windows were named have the program's name there); each other window is named
after its CLI (``codex``, …). :func:`poll_agents` classifies every live window with its own
CLI's patterns and records a dead window's exit on that agent only; the kernel's state is the
combination (:func:`nika_tui.domain.kernel_state.combine_states`), and the kernel exits only
when every window has.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from nika_tui.domain.kernel_state import COMBINE_ORDER, KernelState, StateSource
from nika_tui.domain.pane_patterns import classify_pane
from nika_tui.engine.kernels.exit_handoff import hand_off_dead
from nika_tui.errors import KernelError
from nika_tui.services import kernel_store
from nika_tui.services.kernel_agents import agent_hook_is_fresh, agent_statuses
from nika_tui.services.tmux_sessions import EXIT_MARK, PaneInfo

if TYPE_CHECKING:
    from nika_tui.engine.kernels.manager import KernelManager


def by_agent(cli: str, panes: Mapping[str, PaneInfo]) -> dict[str, PaneInfo]:
    """A session's panes by agent: the first window is ``cli``, the others their window name."""
    out: dict[str, PaneInfo] = {}
    for index, (window, info) in enumerate(panes.items()):
        out[cli if index == 0 else window] = info
    return out


def agent_pane(manager: KernelManager, tenant_id: str, name: str, agent: str | None) -> PaneInfo:
    """The pane of one agent of the kernel (the first window when ``agent`` is None).

    Raises:
        KernelError: the kernel is not running, or has no window for ``agent``.
    """
    from nika_tui.engine.kernels.results import not_running

    panes = manager.tmux.windows().get(name, {})
    if not panes:
        raise not_running(tenant_id)
    if agent is None:
        return next(iter(panes.values()))
    cli = kernel_store.read_fields(manager.redis, tenant_id).get("cli") or "shell"
    agents = by_agent(cli, panes)
    if agent not in agents:
        raise KernelError(
            f"kernel {tenant_id} has no {agent} window",
            f"its agents: {', '.join(agents)} (choose one with --cli)",
        )
    return agents[agent]


def attach_choice(
    manager: KernelManager, tenant_id: str, name: str, agent: str | None
) -> tuple[str, PaneInfo | None, str]:
    """The agent window ``attach`` shows: the one asked for, else the busiest, else the first.

    "Busiest" follows the kernel's own order (:data:`COMBINE_ORDER`): an agent waiting for
    input first (a person attaching is most likely wanted there), then a working one; ties
    and agents with no recorded state go to window order, so a kernel at rest shows its
    first window.

    Returns:
        (agent, its pane — None when the kernel has no session —, why it was chosen).

    Raises:
        KernelError: ``agent`` is given and the kernel has no window for it.
    """
    fields = kernel_store.read_fields(manager.redis, tenant_id)
    cli = fields.get("cli") or "shell"
    if agent is not None:
        return agent, agent_pane(manager, tenant_id, name, agent), "asked for"
    agents = by_agent(cli, manager.tmux.windows().get(name, {}))
    live = {a: p for a, p in agents.items() if not p.dead}
    if len(live) < 2:
        only = live or agents
        first = next(iter(only), cli)
        return first, only.get(first), "its only live agent" if only else "not running"
    states = {a.agent: a.state for a in agent_statuses(fields) if a.agent in live}
    rank = {state: index for index, state in enumerate(COMBINE_ORDER)}
    order = list(live)

    def busyness(a: str) -> tuple[int, int]:
        return rank.get(states.get(a, KernelState.IDLE), len(rank)), order.index(a)

    busiest = min(order, key=busyness)
    state = states.get(busiest)
    if state in (KernelState.WAITING_INPUT, KernelState.WORKING):
        return busiest, live[busiest], f"the busiest ({state.value})"
    return busiest, live[busiest], "the first live window (no agent busier)"


def exit_reason(
    manager: KernelManager, name: str, pane: PaneInfo, during_spawn: bool = False
) -> tuple[KernelState, str]:
    """Why a dead pane's agent ended: exited (status 0 or unknown) or error, with its words."""
    tail = manager.tmux.history_tail(pane, 8)
    status = manager.tmux.dead_status(name, pane, tail)
    said = [ln for ln in tail if not ln.startswith("Pane is dead") and not EXIT_MARK.match(ln)]
    reason = f"exited with status {status}" + (f": {said[-1]}" if said else "")
    failed = during_spawn or status not in ("0", "?")
    return (KernelState.ERROR if failed else KernelState.EXITED), reason


def classify_agent(
    manager: KernelManager, tenant_id: str, agent: str, text: str, now: datetime
) -> KernelState | None:
    """The pane fallback for one agent: its screen decides unless a hook did recently."""
    fields = kernel_store.read_fields(manager.redis, tenant_id)
    entry = next((a for a in agent_statuses(fields) if a.agent == agent), None)
    if entry is not None and agent_hook_is_fresh(entry, now, manager.hook_fresh_s):
        return None
    state = classify_pane(agent, text)
    if state is None:
        return None
    if entry is None or (entry.state, entry.source) != (state, StateSource.PANE):
        kernel_store.set_agent_state(manager.redis, tenant_id, agent, state, StateSource.PANE, now)
    return state


def poll_agents(
    manager: KernelManager, tenant_id: str, name: str, cli: str, panes: Mapping[str, PaneInfo]
) -> str | None:
    """Watch each agent window of a live kernel once.

    Returns:
        The first window's screen, or None when every window turned out dead (the caller
        then records the kernel's exit).
    """
    now = manager.now()
    first_text: str | None = None
    recorded = {
        a.agent: a for a in agent_statuses(kernel_store.read_fields(manager.redis, tenant_id))
    }
    for agent, info in by_agent(cli, panes).items():
        text = "" if info.dead else manager.tmux.visible(info)
        if not info.dead and classify_pane(agent, text) is KernelState.EXITED:
            # It may have ended since the listing ("[exited N]"): look again, so that a
            # real exit is recorded with its reason.
            fresh = by_agent(cli, manager.tmux.windows().get(name, {}))
            info = fresh.get(agent, info)
        if info.dead:
            if all(p.dead for p in manager.tmux.windows().get(name, {}).values()):
                return None
            seen = recorded.get(agent)
            if seen is None or seen.state not in (KernelState.EXITED, KernelState.ERROR):
                state, reason = exit_reason(manager, name, info)
                kernel_store.set_agent_state(
                    manager.redis, tenant_id, agent, state, StateSource.MANAGER, now,
                    event="exit", reason=reason,
                )  # fmt: skip
                body = {"action": "exit", "agent": agent, "state": state.value, "reason": reason}
                manager.bus_event(tenant_id, "kernel.event", body)
                hand_off_dead(manager, tenant_id, [agent], reason)
            continue
        if first_text is None and agent == cli:
            first_text = text
        classify_agent(manager, tenant_id, agent, text, now)
    return first_text if first_text is not None else ""
