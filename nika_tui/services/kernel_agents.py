"""One kernel, several agents: the ``agent.{cli}`` fields of a kernel's status hash.

A tenant may run several agent CLIs side by side, one tmux window each, named after the CLI
(``claude-code``, ``codex``, …). Each window's state lives in its own field of the kernel's
status hash (JSON: state, source, at, reason), so the one ``HGETALL`` that reads the kernel —
the dashboard's pipeline included — reads its agents too. :mod:`.kernel_store` writes them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime

from nika_tui.domain.kernel_state import AgentStatus, KernelState, StateSource

AGENT_FIELD_PREFIX = "agent."
HOOK_AGENT_NAMES: dict[str, str] = {"claude": "claude-code", "gemini": "gemini-cli"}
"""``nika hook CLI`` names → agent CLI kinds (the window names); the others are the same."""


def agent_field(agent: str) -> str:
    """The status-hash field holding one agent window's state."""
    return AGENT_FIELD_PREFIX + agent


def agent_value(state: KernelState, source: StateSource, now: datetime, reason: str = "") -> str:
    return json.dumps(
        {
            "state": state.value,
            "source": source.value,
            "at": now.astimezone(UTC).isoformat(),
            "reason": reason,
        }
    )


def agent_statuses(fields: Mapping[str, str]) -> list[AgentStatus]:
    """Each agent window's state from the status hash: the first window (``cli``) first."""
    out: list[AgentStatus] = []
    for name, raw in fields.items():
        if not name.startswith(AGENT_FIELD_PREFIX):
            continue
        try:
            item = json.loads(raw)
            out.append(
                AgentStatus(
                    agent=name.removeprefix(AGENT_FIELD_PREFIX),
                    state=KernelState(item["state"]),
                    source=StateSource(item["source"]),
                    state_at=datetime.fromisoformat(item["at"]) if item.get("at") else None,
                    reason=str(item.get("reason", "")),
                )
            )
        except (ValueError, KeyError, TypeError):
            continue  # a malformed entry is skipped, not fatal to the listing
    primary = fields.get("cli", "")
    return sorted(out, key=lambda a: (a.agent != primary, a.agent))


def agent_hook_is_fresh(agent: AgentStatus, now: datetime, window_s: float) -> bool:
    """True while an agent's hook-decided state should win over its pane."""
    if agent.source is not StateSource.HOOK or agent.state_at is None:
        return False
    return (now - agent.state_at).total_seconds() < window_s
