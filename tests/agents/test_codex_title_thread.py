"""The real Codex TUI (in a nika kernel) names each new thread with a side request to the model;
its ``notify`` program then fires for that internal thread too. nika must not store the title
as a turn of the tenant (issue 13, point 8).

Seen with Codex 0.171: after the first prompt the TUI sends a second Responses request ("…under
five words… Do not answer the request. User prompt: …") on its own thread id, which has no
rollout file; ``notify`` fires with that thread id and the title as its last message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nika_tui.domain.requests import RecallQuery
from nika_tui.domain.tenant import KernelConfig
from nika_tui.engine.kernels.manager import KernelManager
from nika_tui.services.config_store import load_tenant, save_tenant
from nika_tui.settings import Settings
from tests.helpers import retry_until

pytestmark = [pytest.mark.agents, pytest.mark.tmux, pytest.mark.embedder, pytest.mark.slow]

PROMPT = "The staging server moved to 10.0.9.30, please use it from now on."
ANSWER = "Understood: staging now lives at 10.0.9.30, I will use that address from now on."
TITLE = "Record the staging server move to its new address in the title thread"
IGNORED = "notify for a thread without a rollout (internal): ignored"


def _reply(body: dict[str, Any]) -> str:
    text = str(body.get("input"))
    return TITLE if "Do not answer the request" in text else ANSWER


def test_the_title_thread_of_a_codex_kernel_is_not_stored_as_a_turn(
    codex_bin: Path,
    agent_tenant: Any,
    tmux_server: Any,
    redis_client: Any,
    running_service: Any,
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
    assert manager.spawn(tenant.tenant_id).spawned
    try:
        retry_until(
            lambda: "Ask Codex" in (manager.screen(tenant.tenant_id) or ""),
            timeout=90,
            what="Codex's prompt in the kernel pane",
        )
        manager.send_text(tenant.tenant_id, PROMPT)

        def notified() -> list[dict[str, Any]]:
            return [e for e in tenant.hook_log() if e.get("event") == "notify"]

        # Both threads' notify ran: the agent's turn and the title thread.
        retry_until(lambda: len(notified()) >= 2, timeout=90, what="notify for both threads")
    finally:
        stopped = manager.stop(tenant.tenant_id, timeout_s=12)
    assert stopped.stopped, stopped.message

    titles = [r for r in tenant.mock.model_requests("/responses") if "Do not answer" in r.text()]
    assert titles, "Codex sent no title request (the thread filter is then untested)"
    [turn] = [e for e in tenant.hook_log() if e.get("event") == "UserPromptSubmit"]
    internal = [e for e in notified() if e["session"] != turn["session"]]
    assert internal and all(IGNORED in e["notes"] for e in internal)

    tenant.stored(running_service.client, "staging now lives at 10.0.9.30")  # the real turn
    hits = running_service.client.recall(
        RecallQuery(tenant_id=tenant.tenant_id, query=TITLE, limit=10)
    ).hits
    assert not any("title thread" in h.record.text for h in hits)
