"""Applying the 61% compaction policy to a running kernel (the decision is pure, in
:mod:`nika_tui.domain.compaction`).

``autonomous`` types the CLI's compact command into the pane and records a ``nika-autonomous``
compaction; ``escalate`` queues one ``compact`` confirmation in the tenant's ``confirmations``
hash and on the bus (never two pending at once for one agent; the dashboard approves it by
calling :func:`send_compact`); ``off`` only shows the fill.

A kernel holds one window per agent CLI, each with its own context: the policy runs per agent
(its own fill, its own state, its own cooldown) and types into that agent's window only; the
confirmation names the agent it compacts. Without an agent, the first window is meant.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from nika_tui.domain.agent_cli_table import spec_for
from nika_tui.domain.compaction import CompactionAction, CompactionDecision, decide_compaction
from nika_tui.domain.kernel_state import KernelState
from nika_tui.errors import KernelError
from nika_tui.services import kernel_store, redis_keys
from nika_tui.services.config_store import load_tenant
from nika_tui.services.kernel_agents import agent_statuses

if TYPE_CHECKING:
    from nika_tui.engine.kernels.manager import KernelManager


def send_compact(
    manager: KernelManager,
    tenant_id: str,
    trigger: str = "nika-confirmed",
    fill_percent: float | None = None,
    agent: str | None = None,
) -> str:
    """Type the agent CLI's compact command into its window and record the compaction.

    Args:
        manager: the kernel manager.
        tenant_id: the tenant.
        trigger: recorded in the ``compactions`` stream (``nika-autonomous``, ``nika-confirmed``).
        fill_percent: the fill that prompted it, if known.
        agent: the agent window to compact (its CLI: ``codex``, …); None: the first window.

    Returns:
        The command typed.

    Raises:
        KernelError: the kernel is not running, has no such window, or its CLI has no compact
            command.
    """
    first = kernel_store.read_fields(manager.redis, tenant_id).get("cli")
    cli = agent or first or load_tenant(tenant_id, manager.settings.roots).agent_cli.value
    command = spec_for(cli).compact_command
    if command is None:
        raise KernelError(f"{cli} has no compact command", "compact it by hand in the pane")
    manager.send_text(tenant_id, command, agent=agent)
    now = manager.now()
    kernel_store.mark_compact_requested(manager.redis, tenant_id, now, agent or "")
    kernel_store.record_compaction(manager.redis, tenant_id, now, trigger, fill_percent)
    body = {"action": "compact", "command": command, **({"agent": agent} if agent else {})}
    manager.bus_event(tenant_id, "kernel.event", body)
    return command


def _agent_state(manager: KernelManager, tenant_id: str, agent: str | None) -> KernelState:
    status = manager.poll(tenant_id)  # the freshest state: the policy only acts on idle
    if status is None:
        return KernelState.EXITED
    if agent is not None:
        fields = kernel_store.read_fields(manager.redis, tenant_id)
        mine = next((a for a in agent_statuses(fields) if a.agent == agent), None)
        if mine is not None:
            return mine.state  # another agent's work does not keep this one from compacting
    return status.state


def apply_compaction_policy(
    manager: KernelManager, tenant_id: str, fill_percent: float, agent: str | None = None
) -> CompactionDecision:
    """Decide and act for one agent of a kernel at ``fill_percent`` (see the module docstring).

    Args:
        manager: the kernel manager.
        tenant_id: the tenant.
        fill_percent: the agent's context fill.
        agent: the agent window whose fill it is; None: the first window (the tenant's CLI).

    Returns:
        The :class:`CompactionDecision` taken.
    """
    config = load_tenant(tenant_id, manager.settings.roots)
    state = _agent_state(manager, tenant_id, agent)
    now = manager.now()
    decision = decide_compaction(
        fill_percent,
        state,
        agent or config.agent_cli,
        config.auto_actions.compact,
        now,
        kernel_store.compact_requested_at(manager.redis, tenant_id, agent or ""),
    )
    if decision.action is CompactionAction.SEND_COMPACT:
        send_compact(manager, tenant_id, "nika-autonomous", fill_percent, agent)
    elif decision.action is CompactionAction.REQUEST_CONFIRMATION:
        pending = kernel_store.pending_confirmations(manager.redis, tenant_id, "compact")
        if not any(item.get("agent") == agent for item in pending):
            who = f"{tenant_id}'s {agent}" if agent else f"{tenant_id}'s"
            item = kernel_store.queue_confirmation(
                manager.redis,
                tenant_id,
                "compact",
                f"Compact {who} context ({fill_percent:.0f}% full)?",
                f"{decision.reason} The kernel will receive {decision.command}.",
                now,
            )
            if agent is not None:  # approving it compacts this agent's window
                item["agent"] = agent
                key = redis_keys.confirmations(tenant_id)
                manager.redis.hset(key, item["id"], json.dumps(item))
            manager.bus_event(tenant_id, "confirmation.requested", item)
        kernel_store.mark_compact_requested(manager.redis, tenant_id, now, agent or "")
    return decision
