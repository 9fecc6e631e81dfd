"""Confirmations (escalate mode): a person approves or rejects; approving runs the action."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import redis

from nika_tui.domain.kernel_state import KernelState
from nika_tui.domain.tenant import AgentCli, AutoActions, AutoMode, KernelConfig, TenantConfig
from nika_tui.engine.kernels.confirmations import list_confirmations, resolve
from nika_tui.engine.kernels.manager import KernelManager
from nika_tui.errors import ValidationFailed
from nika_tui.services import confirmation_queue, redis_keys
from nika_tui.services.bus import open_bus
from nika_tui.services.config_store import save_tenant
from nika_tui.settings import Settings
from tests.helpers import retry_until
from tests.plugins.memory import RunningService

if TYPE_CHECKING:  # libtmux is imported by the tmux fixture at use (issue 12)
    import libtmux

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def _tenant(tenant_id: str, workdir: Path) -> None:
    save_tenant(
        TenantConfig(
            tenant_id=tenant_id,
            display_name=tenant_id,
            agent_cli=AgentCli.SHELL,
            auto_actions=AutoActions(compact=AutoMode.ESCALATE),
            kernel=KernelConfig(
                workdir=str(workdir),
                command=[sys.executable, "-m", "nika_tui.assets.standin_agent"],
            ),
        )
    )


def _resolved(tenant_id: str) -> list[dict[str, object]]:
    return [
        line.data["body"]
        for line in open_bus(tenant_id).read()
        if line.data and line.data["kind"] == "confirmation.resolved"
    ]


def test_reject_records_the_decision_and_runs_nothing(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    _tenant("acme", tmp_path)
    item = confirmation_queue.queue_confirmation(
        redis_client, "acme", "compact", "compact?", "", NOW
    )
    assert [i["id"] for i in list_confirmations(redis_client, "acme")] == [item["id"]]
    out = resolve(
        redis_client, "acme", item["id"], approve=False, settings=Settings.from_env(), now=NOW
    )
    assert out["status"] == "rejected"
    assert list_confirmations(redis_client, "acme") == []
    stored = json.loads(str(redis_client.hget(redis_keys.confirmations("acme"), item["id"])))
    assert stored["status"] == "rejected"
    assert _resolved("acme") == [{"id": item["id"], "kind": "compact", "status": "rejected"}]
    with pytest.raises(ValidationFailed, match="no pending confirmation"):
        resolve(redis_client, "acme", item["id"], approve=True, settings=Settings.from_env())


@pytest.mark.tmux
def test_approving_a_compact_confirmation_types_the_compact_command(
    tmux_server: libtmux.Server, redis_client: redis.Redis, tmp_path: Path
) -> None:
    _tenant("acme", tmp_path)
    manager = KernelManager(Settings.from_env(), redis_client=redis_client)
    manager.spawn("acme")
    retry_until(
        lambda: (s := manager.poll("acme")) and s.state is KernelState.IDLE, what="idle kernel"
    )
    item = confirmation_queue.queue_confirmation(
        redis_client, "acme", "compact", "compact?", "", NOW
    )
    out = resolve(
        redis_client, "acme", item["id"], approve=True, settings=Settings.from_env(), now=NOW
    )
    assert out["status"] == "approved" and out["result"] == {"command": "/compact"}
    retry_until(lambda: "Conversation compacted" in manager.screen("acme"), what="compacted")
    assert _resolved("acme") == [{"id": item["id"], "kind": "compact", "status": "approved"}]


@pytest.mark.embedder
def test_approving_a_debt_confirmation_runs_the_action_in_the_service(
    running_service: RunningService,
    make_tenant,
    redis_client: redis.Redis,  # type: ignore[no-untyped-def]
) -> None:
    make_tenant("acme")
    item = confirmation_queue.queue_confirmation(
        redis_client, "acme", "debt.diagnose_spawn", "diagnose spawn?", "", NOW
    )
    out = resolve(
        redis_client, "acme", item["id"], approve=True, settings=Settings.from_env(), now=NOW
    )
    assert out["status"] == "approved"
    assert redis_client.exists(redis_keys.spawn_diagnosis("acme"))  # the action ran
    stored = json.loads(str(redis_client.hget(redis_keys.confirmations("acme"), item["id"])))
    assert stored["status"] == "approved"


def test_cli_lists_and_refuses_an_unknown_id(redis_url: str, tmp_path: Path) -> None:
    _tenant("acme", tmp_path)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    item = confirmation_queue.queue_confirmation(client, "acme", "rem.run", "run REM?", "", NOW)
    run = [sys.executable, "-m", "nika_tui", "confirm"]
    listed = subprocess.run(
        [*run, "list", "--tenant", "acme", "--json"], capture_output=True, text=True, check=True
    )
    assert [i["id"] for i in json.loads(listed.stdout)] == [item["id"]]
    bad = subprocess.run(
        [*run, "approve", "nope", "--tenant", "acme"], capture_output=True, text=True
    )
    assert bad.returncode == 2
    assert "0 pending confirmations match 'nope'" in bad.stderr
