"""``/compact`` typed into the real Codex TUI, in a nika kernel (tmux on a private socket).

``codex exec`` has no slash commands; the interactive TUI does. A person's manual compaction
must hand off as Codex's automatic one does (``test_codex_compaction.py``): PreCompact keeps
the packet pending, PostCompact (or SessionStart ``compact``) commits it — counted, the
session's and the project's newest packet — and the next Codex session gets it once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nika_tui.domain.tenant import KernelConfig
from nika_tui.engine.kernels.manager import KernelManager
from nika_tui.services import redis_keys
from nika_tui.services.config_store import load_tenant, save_tenant
from nika_tui.settings import Settings
from tests.agents.mock_anthropic_openai import default_reply
from tests.helpers import retry_until

pytestmark = [pytest.mark.agents, pytest.mark.tmux, pytest.mark.slow]

COMPACTION_PROMPT = "CONTEXT CHECKPOINT COMPACTION"
TASK = "Task delta: rename the ledger table to journal and keep a view for old readers."


def _reply(body: dict[str, Any]) -> str:
    items = body.get("input") or []
    last = json.dumps(items[-1] if isinstance(items, list) and items else "")
    if COMPACTION_PROMPT in last:
        return "<summary>Renaming the ledger table to journal, a view kept.</summary>"
    return default_reply({"input": "a turn"})


def _codex_events(tenant: Any) -> list[str]:
    return [e["event"] for e in tenant.hook_log() if e.get("cli") == "codex"]


def test_compact_typed_in_the_codex_tui_commits_the_packet_and_the_next_session_gets_it_once(
    codex_bin: Path, agent_tenant: Any, tmux_server: Any, redis_client: Any
) -> None:
    tenant = agent_tenant(["codex"])
    tenant.mock.reply = _reply
    config = load_tenant(tenant.tenant_id)
    kernel = KernelConfig(
        workdir=str(tenant.project),
        command=[str(codex_bin)],
        env={"MOCK_API_KEY": "not-a-secret", "HOME": str(tenant.home)},
        trust_codex_hooks=True,
    )
    save_tenant(config.model_copy(update={"kernel": kernel}))
    manager = KernelManager(
        Settings.from_env(tenant.env), child_env=tenant.env, redis_client=redis_client
    )
    spawned = manager.spawn(tenant.tenant_id)
    assert spawned.spawned, spawned.message
    try:
        retry_until(
            lambda: "Ask Codex" in manager.screen(tenant.tenant_id),
            timeout=60,
            what="Codex's prompt in the kernel pane",
        )
        manager.send_text(tenant.tenant_id, TASK)
        retry_until(
            lambda: "Stop" in _codex_events(tenant) or None,
            timeout=90,
            what="Codex's first turn to finish (its Stop hook)",
        )
        manager.send_text(tenant.tenant_id, "/compact")
        retry_until(
            lambda: redis_client.xlen(redis_keys.compactions(tenant.tenant_id)) == 1 or None,
            timeout=90,
            what="the /compact to be committed (one compaction counted)",
        )
        [(_id, compaction)] = redis_client.xrange(redis_keys.compactions(tenant.tenant_id))
        assert compaction["trigger"] == "manual"  # the person's /compact, not Codex's own
        retry_until(
            lambda: {"PreCompact", "PostCompact"} <= set(_codex_events(tenant)) or None,
            timeout=30,
            what="Codex's PreCompact and PostCompact hooks for the /compact",
        )
        events = _codex_events(tenant)
        assert events.index("PreCompact") < events.index("PostCompact")
        assert any(COMPACTION_PROMPT in r.text() for r in tenant.mock.model_requests("/responses"))
    finally:
        stopped = manager.stop(tenant.tenant_id, timeout_s=12)
    assert stopped.stopped, stopped.message

    # Committed: the project's newest packet is this compaction's, nothing left pending.
    project = json.loads(
        redis_client.get(redis_keys.handoff_project(tenant.tenant_id, "acme-shop"))
    )
    assert f"Last ask: {TASK}" in project["text"]
    assert not redis_client.keys(redis_keys.handoff_packet(tenant.tenant_id, "*"))

    # The next Codex session (a new `codex exec`) gets the packet once.
    tenant.mock.clear()
    run = tenant.codex(codex_bin, "Which task was the last session on?")
    assert run.returncode == 0, run.stderr[-2000:]
    asked = [r for r in tenant.mock.model_requests("/responses") if "Which task" in r.text()]
    assert asked, "the new session's prompt never reached the model"
    text = asked[0].text()
    assert text.count("HANDOFF PACKET session") == 1
    assert f"Last ask: {TASK}" in text
    assert text.count("<nika-memory") == text.count("</nika-memory>") == 1
