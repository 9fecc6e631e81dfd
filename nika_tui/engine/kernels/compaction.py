"""Applying the 61% compaction policy to a running kernel (the decision is pure, in
:mod:`nika_tui.domain.compaction`).

``autonomous`` types the CLI's compact command into the pane and records a ``nika-autonomous``
compaction; ``escalate`` queues one ``compact`` confirmation in the tenant's ``confirmations``
hash and on the bus (never two pending at once; the dashboard approves it by calling
:func:`send_compact`); ``off`` only shows the fill.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nika_tui.domain.agent_cli_table import spec_for
from nika_tui.domain.compaction import CompactionAction, CompactionDecision, decide_compaction
from nika_tui.domain.kernel_state import KernelState
from nika_tui.errors import KernelError
from nika_tui.services import kernel_store
from nika_tui.services.config_store import load_tenant

if TYPE_CHECKING:
    from nika_tui.engine.kernels.manager import KernelManager


def send_compact(
    manager: KernelManager,
    tenant_id: str,
    trigger: str = "nika-confirmed",
    fill_percent: float | None = None,
) -> str:
    """Type the CLI's compact command into the kernel and record the compaction.

    Args:
        manager: the kernel manager.
        tenant_id: the tenant.
        trigger: recorded in the ``compactions`` stream (``nika-autonomous``, ``nika-confirmed``).
        fill_percent: the fill that prompted it, if known.

    Returns:
        The command typed.

    Raises:
        KernelError: the kernel is not running, or its CLI has no compact command.
    """
    fields = kernel_store.read_fields(manager.redis, tenant_id)
    cli = fields.get("cli") or load_tenant(tenant_id, manager.env).agent_cli.value
    command = spec_for(cli).compact_command
    if command is None:
        raise KernelError(f"{cli} has no compact command", "compact it by hand in the pane")
    manager.send_text(tenant_id, command)
    now = manager.now()
    kernel_store.mark_compact_requested(manager.redis, tenant_id, now)
    kernel_store.record_compaction(manager.redis, tenant_id, now, trigger, fill_percent)
    manager.bus_event(tenant_id, "kernel.event", {"action": "compact", "command": command})
    return command


def apply_compaction_policy(
    manager: KernelManager, tenant_id: str, fill_percent: float
) -> CompactionDecision:
    """Decide and act for one kernel at ``fill_percent`` (see the module docstring).

    Returns:
        The :class:`CompactionDecision` taken.
    """
    config = load_tenant(tenant_id, manager.env)
    status = manager.poll(tenant_id)  # the freshest state: the policy only acts on idle
    state = status.state if status is not None else KernelState.EXITED
    now = manager.now()
    decision = decide_compaction(
        fill_percent,
        state,
        config.agent_cli,
        config.auto_actions.compact,
        now,
        kernel_store.compact_requested_at(manager.redis, tenant_id),
    )
    if decision.action is CompactionAction.SEND_COMPACT:
        send_compact(manager, tenant_id, "nika-autonomous", fill_percent)
    elif decision.action is CompactionAction.REQUEST_CONFIRMATION:
        if kernel_store.pending_confirmation(manager.redis, tenant_id, "compact") is None:
            item = kernel_store.queue_confirmation(
                manager.redis,
                tenant_id,
                "compact",
                f"Compact {tenant_id}'s context ({fill_percent:.0f}% full)?",
                f"{decision.reason} The kernel will receive {decision.command}.",
                now,
            )
            manager.bus_event(tenant_id, "confirmation.requested", item)
        kernel_store.mark_compact_requested(manager.redis, tenant_id, now)
    return decision
