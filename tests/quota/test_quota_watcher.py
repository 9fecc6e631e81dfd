"""The service's token-quota watcher (``QuotaWatcher``, run by the service loop): once per
minute on a hand-moved clock, over every saved tenant, it warns at 80 % and pauses a real
process at 100 %, each once a day, and says so on the tenant's bus."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis

from nika_tui.billing.collect import add_tokens
from nika_tui.domain.tenant import Quotas, TenantConfig, TokenLimitAction
from nika_tui.engine.context import EngineContext
from nika_tui.engine.server.periodic import periodic_jobs
from nika_tui.engine.worker import Worker
from nika_tui.engine.worker_keys import PRIMARY_ID
from nika_tui.quota.tokens import QuotaWatcher, enforce_tokens
from nika_tui.services import redis_keys
from nika_tui.services.bus import open_bus
from nika_tui.services.config_store import save_tenant
from nika_tui.services.embeddings import SentenceTransformerEmbedder
from nika_tui.services.vectors.edge import EdgeVectorStore
from nika_tui.settings import Settings
from tests.helpers import retry_until
from tests.scale.support import Clock

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _events(kind: str) -> list[dict[str, object]]:
    return [
        line.data for line in open_bus("acme").read() if line.data and line.data["kind"] == kind
    ]


@pytest.fixture
def agent(redis_client: redis.Redis) -> Iterator[subprocess.Popen[bytes]]:
    """A real process standing for acme's agent, registered as its kernel's pid."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    redis_client.hset(redis_keys.kernel_state("acme"), "pid", str(proc.pid))
    yield proc
    proc.kill()
    proc.wait()


def test_the_watcher_warns_then_pauses_once_a_day_on_the_bus(
    redis_client: redis.Redis, agent: subprocess.Popen[bytes]
) -> None:
    save_tenant(TenantConfig(tenant_id="acme", display_name="Acme", quotas=Quotas(
        cpu_percent=50, ram_mb=512, tokens_per_day=1000,
        on_token_limit=TokenLimitAction.PAUSE)))  # fmt: skip
    clock = Clock()
    watcher = QuotaWatcher(redis_client, every_s=60.0, monotonic=clock)
    add_tokens(redis_client, "acme", "20261203", 850)
    assert watcher.tick(NOW) == ["acme:warned"]
    [warning] = _events("quota.warning")
    assert warning["body"] == {"used": 850, "limit": 1000, "percent": 85.0}

    add_tokens(redis_client, "acme", "20261203", 200)
    clock.t += 30
    assert watcher.tick(NOW + timedelta(seconds=30)) == []  # not due: once a minute
    clock.t += 30
    assert watcher.tick(NOW + timedelta(minutes=1)) == ["acme:paused:1"]
    retry_until(lambda: _state(agent.pid) == "T", timeout=5, what="the agent stopped")
    [paused] = _events("quota.paused")
    assert paused["body"] == {"pids": [agent.pid]}
    clock.t += 60
    assert watcher.tick(NOW + timedelta(minutes=2)) == []  # once a day
    assert len(_events("quota.warning")) == 1


@pytest.mark.embedder
@pytest.mark.parametrize("joined", [False, True], ids=["primary", "joined-worker"])
def test_only_the_service_beside_the_kernels_pauses_them(
    joined: bool,
    redis_client: redis.Redis,
    agent: subprocess.Popen[bytes],
    embedder: SentenceTransformerEmbedder,
    tmp_path: Path,
) -> None:
    """A joined worker (another host, as far as it knows) never signals the pid the primary's
    kernel registered: on its host that number is some other process (decision 512)."""
    save_tenant(TenantConfig(tenant_id="acme", display_name="Acme", quotas=Quotas(
        cpu_percent=50, ram_mb=512, tokens_per_day=1000,
        on_token_limit=TokenLimitAction.PAUSE)))  # fmt: skip
    add_tokens(redis_client, "acme", "20261203", 1000)
    env = dict(os.environ)
    store = EdgeVectorStore(tmp_path / "qdrant", 384, flush_writes=False)
    ctx = EngineContext(settings=Settings.from_env(env), redis=redis_client,
                        child_env=env, secrets_env=env,
                        vectors=store, embedder=embedder)  # fmt: skip
    worker = Worker(redis_client, "wb" if joined else PRIMARY_ID, tmp_path / "w", store, ttl_s=30)
    try:
        jobs = periodic_jobs(ctx, "wb" if joined else "memory-service", worker)
        assert jobs.quota.tick(NOW) == ([] if joined else ["acme:warned", "acme:paused:1"])
        assert (_state(agent.pid) == "T") is not joined
        assert bool(_events("quota.paused")) is not joined
    finally:
        store.close()


def test_quota_resume_continues_a_paused_agent_for_the_rest_of_the_day(
    redis_client: redis.Redis, agent: subprocess.Popen[bytes]
) -> None:
    config = TenantConfig(
        tenant_id="acme",
        display_name="Acme",
        quotas=Quotas(
            cpu_percent=50, ram_mb=512, tokens_per_day=1000, on_token_limit=TokenLimitAction.PAUSE
        ),
    )
    save_tenant(config)  # fmt: skip
    now = datetime.now(UTC)
    add_tokens(redis_client, "acme", now.strftime("%Y%m%d"), 1200)
    assert "paused:1" in enforce_tokens(redis_client, config, now)
    retry_until(lambda: _state(agent.pid) == "T", timeout=5, what="the agent stopped")
    cli = subprocess.run(
        [sys.executable, "-m", "nika_tui", "quota", "resume", "--tenant", "acme", "--json"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["resumed_pids"] == [agent.pid]
    retry_until(lambda: _state(agent.pid) != "T", timeout=5, what="the agent continued")
    assert [e["body"] for e in _events("quota.resumed")] == [{"pids": [agent.pid]}]
    assert enforce_tokens(redis_client, config, now) == []  # not paused again today
    assert _state(agent.pid) != "T"
