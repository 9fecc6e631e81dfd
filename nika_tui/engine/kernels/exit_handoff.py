"""The handoff of an agent that died: a kernel window whose process ended without SessionEnd
(a crash, a kill, a stop on quota) leaves no packet of its own, so the kernel watcher builds
the one SessionEnd would have published, from the session's transcript
(:func:`nika_tui.hooks.handoff.exit_handoff`), when it sees the window's pane dead. The next
session on the project — any CLI — then starts from it (decision 442).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from nika_tui.hooks.context import HookContext
from nika_tui.hooks.handoff import exit_handoff
from nika_tui.services import agent_sessions

if TYPE_CHECKING:
    from nika_tui.engine.kernels.manager import KernelManager

log = logging.getLogger("nika.kernels")


def hand_off_dead(
    manager: KernelManager, tenant_id: str, windows: Iterable[str] | None, reason: str
) -> list[str]:
    """Publish the handoff of each of ``windows`` (all when None) whose session is still open.

    Args:
        manager: the kernel manager (its Redis, environment and clock).
        tenant_id: the kernel's tenant.
        windows: the dead agent windows; None when the whole kernel ended.
        reason: why the agent ended (``exited with status 1: …``), said in the packet.

    Returns:
        The sessions handed off.
    """
    done: list[str] = []
    for session in agent_sessions.take(manager.redis, tenant_id, windows):
        payload = {
            "session_id": session.session_id,
            "transcript_path": session.transcript_path,
            "cwd": session.cwd,
            "reason": f"the agent ended without SessionEnd ({reason})",
        }
        ctx = HookContext(
            cli=session.cli,
            event="SessionEnd",
            payload=payload,
            env=manager.child_env,
            tenant_id=tenant_id,
            now=manager.now(),
            _redis=manager.redis,
        )
        packet = exit_handoff(ctx, session.window, session.last_prompt)
        if packet is None:
            # Nothing to hand off (no prompt in the transcript) or a step failed: say which.
            notes = "; ".join(ctx.notes) or "no prompt in the transcript"
            log.info("no exit handoff for %s %s: %s", tenant_id, session.session_id, notes)
        else:
            done.append(session.session_id)
            body = {"action": "handoff", "agent": session.window, "session_id": session.session_id}
            manager.bus_event(tenant_id, "kernel.event", body)
    return done
