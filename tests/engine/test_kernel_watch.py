"""The service's kernel watcher: heartbeats from polling, and the 61% policy from recorded fill."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import redis

from nika_tui.domain.kernel_state import KernelState
from nika_tui.domain.tenant import AgentCli, AutoActions, AutoMode, KernelConfig, TenantConfig
from nika_tui.engine.kernel_watch import KernelWatcher
from nika_tui.services import kernel_store, redis_keys, wm_store
from nika_tui.services.config_store import save_tenant
from nika_tui.services.transcripts.common import ContextFill, TranscriptFormat
from nika_tui.settings import Settings
from tests.helpers import retry_until

if TYPE_CHECKING:  # libtmux is imported by the tmux fixture at use (issue 12)
    import libtmux

pytestmark = pytest.mark.tmux


def _tenant(tenant_id: str, workdir: Path, compact: AutoMode) -> None:
    save_tenant(
        TenantConfig(
            tenant_id=tenant_id,
            display_name=tenant_id,
            agent_cli=AgentCli.SHELL,
            auto_actions=AutoActions(compact=compact),
            kernel=KernelConfig(
                workdir=str(workdir),
                command=[sys.executable, "-m", "nika_tui.assets.standin_agent"],
            ),
        )
    )


def _fill(client: redis.Redis, tenant_id: str, percent: float) -> None:
    fill = ContextFill(
        fill_percent=percent,
        tokens=int(percent * 2000),
        window=200_000,
        format=next(iter(TranscriptFormat)),
    )
    wm_store.record_fill(client, tenant_id, fill, "transcript.jsonl", datetime.now(UTC))


def test_watcher_acts_only_on_kernels_past_61_percent(
    tmux_server: libtmux.Server,
    redis_client: redis.Redis,
    tmp_path: Path,
    isolated_env: dict[str, str],
) -> None:
    _tenant("hot", tmp_path, AutoMode.AUTONOMOUS)
    _tenant("cool", tmp_path, AutoMode.AUTONOMOUS)
    watcher = KernelWatcher(Settings.from_env(), interval_s=0.1)
    for tenant_id in ("hot", "cool"):
        watcher.manager.spawn(tenant_id)
        retry_until(
            lambda t=tenant_id: (s := watcher.manager.poll(t)) and s.state is KernelState.IDLE,
            what=f"{tenant_id} idle",
        )
    _fill(redis_client, "hot", 72.0)
    _fill(redis_client, "cool", 40.0)
    redis_client.delete(redis_keys.kernel_heartbeat("hot"), redis_keys.kernel_heartbeat("cool"))

    assert watcher.tick() == ["hot"]

    # Polling refreshed both heartbeats; only the hot kernel got the compact command.
    assert redis_client.exists(redis_keys.kernel_heartbeat("hot"))
    assert redis_client.exists(redis_keys.kernel_heartbeat("cool"))
    retry_until(
        lambda: "Conversation compacted" in watcher.manager.screen("hot"), what="compact typed"
    )
    assert "Conversation compacted" not in watcher.manager.screen("cool")
    triggers = [e[1]["trigger"] for e in redis_client.xrange(redis_keys.compactions("hot"))]
    assert triggers == ["nika-autonomous"]
    assert kernel_store.read_fields(redis_client, "cool").get("state") == "idle"
