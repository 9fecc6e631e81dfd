"""Tokens per day: warn at 80%, at 100% pause (SIGSTOP of a real process) or ask."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis

from nika_tui.billing.collect import add_tokens
from nika_tui.domain.tenant import Quotas, TenantConfig, TokenLimitAction
from nika_tui.engine.kernels.confirmations import list_confirmations, resolve
from nika_tui.quota.tokens import enforce_tokens, token_status
from nika_tui.services import redis_keys
from nika_tui.services.config_store import save_tenant
from nika_tui.settings import Settings
from tests.helpers import retry_until

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.fixture
def agent(redis_client: redis.Redis) -> Iterator[subprocess.Popen[bytes]]:
    """A real process standing for the kernel's agent, registered as the kernel pid."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    redis_client.hset(redis_keys.kernel_state("acme"), "pid", str(proc.pid))
    yield proc
    proc.kill()
    proc.wait()


def _tenant(action: TokenLimitAction) -> TenantConfig:
    config = TenantConfig(
        tenant_id="acme",
        display_name="Acme",
        quotas=Quotas(cpu_percent=50, ram_mb=512, tokens_per_day=1000, on_token_limit=action),
    )
    save_tenant(config)
    return config


def test_warn_at_80_percent_once(redis_client: redis.Redis, agent) -> None:
    config = _tenant(TokenLimitAction.PAUSE)
    add_tokens(redis_client, "acme", "20261203", 799)
    assert enforce_tokens(redis_client, config, NOW) == []
    add_tokens(redis_client, "acme", "20261203", 1)
    assert enforce_tokens(redis_client, config, NOW) == ["warned"]
    assert enforce_tokens(redis_client, config, NOW) == []
    assert token_status(redis_client, config, NOW)["state"] == "warning"
    assert _state(agent.pid) != "T"


def test_pause_at_100_percent_then_resume_next_day(redis_client: redis.Redis, agent) -> None:
    config = _tenant(TokenLimitAction.PAUSE)
    add_tokens(redis_client, "acme", "20261203", 1000)
    done = enforce_tokens(redis_client, config, NOW)
    assert "paused:1" in done
    retry_until(lambda: _state(agent.pid) == "T", timeout=5)
    assert token_status(redis_client, config, NOW)["paused"]
    tomorrow = NOW + timedelta(days=1)
    assert enforce_tokens(redis_client, config, tomorrow) == ["resumed"]
    retry_until(lambda: _state(agent.pid) != "T", timeout=5)


def test_ask_queues_a_confirmation_and_approving_pauses(redis_client, agent) -> None:
    config = _tenant(TokenLimitAction.ASK)
    add_tokens(redis_client, "acme", "20261203", 1500)
    assert enforce_tokens(redis_client, config, NOW) == ["warned", "asked"]
    assert _state(agent.pid) != "T"
    [item] = list_confirmations(redis_client, "acme")
    assert item["kind"] == "quota.pause" and "1500/1000" in item["title"]
    assert enforce_tokens(redis_client, config, NOW) == []  # asked once a day
    resolve(redis_client, "acme", item["id"], approve=True, settings=Settings.from_env())
    retry_until(lambda: _state(agent.pid) == "T", timeout=5)
    import os
    import signal

    os.kill(agent.pid, signal.SIGCONT)
