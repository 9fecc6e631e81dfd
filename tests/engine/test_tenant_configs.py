"""Tenant configs reach joined workers through the shared Redis (decision 382): two config dirs,
one Redis; then two real `nika serve` whose joined worker starts with an empty config dir."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import KernelConfig, TenantConfig
from nika_tui.engine.tenant_configs import CONFIGS, TenantConfigSync, fetch, publish
from nika_tui.engine.worker_keys import PRIMARY_ID, alive_key, preferred
from nika_tui.paths import Roots, roots
from nika_tui.services import redis_keys
from nika_tui.services.config_store import list_tenant_ids, load_tenant, save_tenant
from nika_tui.services.memory_client import MemoryClient
from tests.helpers import retry_until

JOINED = "wb"


def _other_roots(tmp_path: Path) -> Roots:
    return roots({"NIKA_OS_CONFIG_DIR": str(tmp_path / "cfg-b"),
                  "NIKA_OS_DATA_DIR": str(tmp_path / "data-b")})  # fmt: skip


def test_published_configs_are_written_on_the_other_side_private_and_updated(
    make_tenant: Callable[..., TenantConfig], redis_client: redis.Redis, tmp_path: Path
) -> None:
    here, there = roots(), _other_roots(tmp_path)
    make_tenant("acme")
    make_tenant("globex", "fr")
    assert publish(redis_client, here) == ["acme", "globex"]
    assert publish(redis_client, here) == [], "unchanged: nothing published again"
    assert fetch(redis_client, there) == ["acme", "globex"]
    assert list_tenant_ids(there) == ["acme", "globex"]
    assert load_tenant("globex", there) == load_tenant("globex", here)
    path = there.tenant_config_path("acme")
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert fetch(redis_client, there) == []

    changed = load_tenant("acme", here).model_copy(update={"display_name": "Acme Corp"})
    save_tenant(changed, here)
    assert publish(redis_client, here) == ["acme"]
    assert fetch(redis_client, there) == ["acme"]
    assert load_tenant("acme", there).display_name == "Acme Corp"


def test_a_joined_worker_fetches_at_once_a_tenant_it_is_about_to_ingest(
    make_tenant: Callable[..., TenantConfig], redis_client: redis.Redis, tmp_path: Path
) -> None:
    there = _other_roots(tmp_path)
    joined = TenantConfigSync(redis_client, there, primary=False, monotonic=lambda: 0.0)
    assert joined.tick() == []  # nothing published yet; the next tick is 2 s away
    make_tenant("acme")
    publish(redis_client, roots())
    assert joined.tick() == [], "rate-limited"
    joined.ensure({"acme"})
    assert list_tenant_ids(there) == ["acme"]


def test_a_config_holding_a_secret_value_is_not_published(
    make_tenant: Callable[..., TenantConfig], redis_client: redis.Redis
) -> None:
    key = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 3
    leaky = make_tenant("acme").model_copy(
        update={"kernel": KernelConfig(env={"OPENAI_API_KEY": key})}
    )
    save_tenant(leaky)
    make_tenant("globex")
    assert publish(redis_client, roots()) == ["globex"]
    stored = json.dumps(redis_client.hgetall(CONFIGS))
    assert "sk-proj-" not in stored and "a1B2c3D4" not in stored


def _serve(data: Path, cfg: Path, log: Path, *join: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, NIKA_OS_DATA_DIR=str(data), NIKA_OS_CONFIG_DIR=str(cfg),
               NIKA_LEASE_TTL_S="3", NIKA_KERNEL_WATCH_S="0")  # fmt: skip
    out = log.open("ab")
    return subprocess.Popen([sys.executable, "-m", "nika_tui", "serve", *join], stdout=out,
                            stderr=out, env=env)  # fmt: skip


def _sees_both(r: redis.Redis, worker_id: str) -> bool:
    raw = r.get(alive_key(worker_id))
    return bool(raw) and set(json.loads(str(raw))["sees"]) == {PRIMARY_ID, JOINED}


@pytest.mark.slow
@pytest.mark.embedder
def test_a_joined_worker_with_an_empty_config_dir_serves_its_tenants(
    make_tenant: Callable[..., TenantConfig],
    redis_client: redis.Redis,
    redis_url: str,
    tmp_path: Path,
) -> None:
    tenants = [f"tenant{i}" for i in range(6)]
    for t in tenants:
        make_tenant(t)
    theirs = [t for t in tenants if preferred(t, [PRIMARY_ID, JOINED]) == JOINED]
    assert theirs, "the hash gives the joined worker at least one tenant"
    cfg_b = tmp_path / "cfg-b"  # the joined worker's own config dir: empty
    log = tmp_path / "workers.log"
    procs = [
        _serve(tmp_path / "a", Path(os.environ["NIKA_OS_CONFIG_DIR"]), log),
        _serve(tmp_path / "b", cfg_b, log, "--join", redis_url, "--worker-id", JOINED),
    ]
    try:
        for w in (PRIMARY_ID, JOINED):
            retry_until(lambda w=w: _sees_both(redis_client, w), timeout=180, interval=0.1,
                        what=f"{w} sees both workers")  # fmt: skip
        client = MemoryClient(redis_client, timeout=60)
        at = datetime(2026, 12, 4, tzinfo=UTC)
        for t in tenants:
            for i in range(5):
                req = RememberRequest(tenant_id=t, text=f"{t} fact {i}: port {9000 + i}",
                                      meta=NikaMeta(timestamp=at, project_id="p"))  # fmt: skip
                client.remember(req)

        def stored() -> bool:
            return all(
                int(redis_client.hget(redis_keys.metrics(t), "ingested") or 0) >= 5 for t in tenants
            )

        retry_until(stored, timeout=120, interval=0.2, what="every tenant's memories stored")
        holders = {t: str(redis_client.get(f"nika:lease:{t}")).split("|")[0] for t in tenants}
        assert {t for t, h in holders.items() if h == JOINED} == set(theirs), holders
        assert redis_client.xlen(redis_keys.INGEST_DEAD) == 0, "no entry dead-lettered"
        assert set(theirs) <= set(list_tenant_ids(_other_roots(tmp_path)))
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
