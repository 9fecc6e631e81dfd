"""Tenant configs reach joined workers through the shared Redis (decision 382): two config dirs,
one Redis; then two real `nika serve` whose joined worker starts with an empty config dir."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import KernelConfig, TenantConfig
from nika_tui.engine.context import EngineContext
from nika_tui.engine.leases import LEASE_TENANTS, lease_key
from nika_tui.engine.server.loop import MemoryService
from nika_tui.engine.tenant_configs import CONFIGS, DELETED, TenantConfigSync, fetch, publish
from nika_tui.engine.worker import Worker
from nika_tui.engine.worker_keys import PRIMARY_ID, alive_key, preferred
from nika_tui.paths import Roots, roots
from nika_tui.services import redis_keys
from nika_tui.services.config_store import list_tenant_ids, load_tenant, save_tenant
from nika_tui.services.embeddings import SentenceTransformerEmbedder
from nika_tui.services.memory_client import MemoryClient
from nika_tui.services.vectors.edge import EdgeVectorStore
from nika_tui.settings import Settings
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
        # A 4/2 hash split is evened out by a move (decision 381): wait for it to settle.
        holders = retry_until(lambda: _settled(redis_client, tenants), timeout=120,
                              interval=0.2, what="the tenants settled")  # fmt: skip
        held_there = {t for t, h in holders.items() if h == JOINED}
        assert held_there, holders
        assert redis_client.xlen(redis_keys.INGEST_DEAD) == 0, "no entry dead-lettered"
        assert set(theirs) | held_there <= set(list_tenant_ids(_other_roots(tmp_path)))
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.mark.embedder
def test_a_new_tenants_entry_waits_for_its_config_instead_of_the_dead_letter(
    make_tenant: Callable[..., TenantConfig],
    redis_client: redis.Redis,
    redis_url: str,
    embedder: SentenceTransformerEmbedder,
    tmp_path: Path,
) -> None:
    """A joined worker that gets a tenant's entry before the primary published its config
    (decision 457): the entry stays pending and is stored once the config arrives; an entry
    of a tenant that never comes is still refused once past the wait."""
    env = dict(os.environ, NIKA_OS_CONFIG_DIR=str(tmp_path / "cfg-b"),
               NIKA_OS_DATA_DIR=str(tmp_path / "data-b"))  # fmt: skip
    own = redis.Redis.from_url(redis_url, decode_responses=True)
    store = EdgeVectorStore(tmp_path / "qdrant-b", 384, flush_writes=False)
    ctx = EngineContext(settings=Settings.from_env(env), redis=own, vectors=store,
                        child_env=env, secrets_env=env,
                        embedder=embedder)  # fmt: skip
    worker = Worker(own, JOINED, tmp_path / "data-b", store, ttl_s=30)
    service = MemoryService(ctx, embed_ahead=False, worker=worker)
    thread = threading.Thread(target=service.run, daemon=True)
    thread.start()
    at = datetime(2026, 12, 4, tzinfo=UTC)
    try:
        retry_until(lambda: redis_client.exists(alive_key(JOINED)), timeout=60,
                    what="the joined worker is live")  # fmt: skip
        # An entry a minute old, of a tenant no primary ever published: refused as before.
        seconds, _ = redis_client.time()
        ghost = RememberRequest(tenant_id="ghost", text="ghost fact", meta=NikaMeta(timestamp=at))
        redis_client.xadd(redis_keys.INGEST_STREAM, {"req": ghost.model_dump_json()},
                          id=f"{(int(seconds) - 60) * 1000}-0")  # fmt: skip
        retry_until(lambda: redis_client.xlen(redis_keys.INGEST_DEAD) == 1, timeout=30,
                    what="the ghost tenant's entry dead-lettered")  # fmt: skip
        [(_, dead)] = redis_client.xrange(redis_keys.INGEST_DEAD)
        assert "unknown tenant 'ghost'" in json.dumps(dead)

        # A tenant made on the primary's host just now, its config not published yet.
        make_tenant("newco")
        client = MemoryClient(redis_client, timeout=30)
        req = RememberRequest(tenant_id="newco", text="newco fact: port 9000",
                              meta=NikaMeta(timestamp=at, project_id="p"))  # fmt: skip
        key = client.remember(req)

        def kept_and_retried() -> bool:
            rows: Any = redis_client.xpending_range(
                redis_keys.INGEST_STREAM, "memory-service", "-", "+", 10, consumername=JOINED
            )
            # Delivered again by the deferred retry: it was read, kept pending, read again.
            return len(rows) == 1 and int(rows[0]["times_delivered"]) >= 2

        retry_until(kept_and_retried, timeout=60, interval=0.1,
                    what="the worker kept newco's entry pending and retried it")  # fmt: skip
        assert redis_client.xlen(redis_keys.INGEST_DEAD) == 1, "nothing more dead-lettered"
        assert publish(redis_client, roots()) == ["newco"]  # the primary's next sync
        retry_until(
            lambda: int(redis_client.hget(redis_keys.metrics("newco"), "ingested") or 0) == 1,
            timeout=60, interval=0.1, what="newco's memory stored once its config came",
        )  # fmt: skip
        done = redis_keys.ingest_done("newco", key)
        [outcome] = retry_until(lambda: redis_client.lrange(done, 0, -1), timeout=30,
                                what="newco's outcome pushed")  # fmt: skip
        assert "error" not in json.loads(outcome), outcome
        assert redis_client.xlen(redis_keys.INGEST_DEAD) == 1
    finally:
        service.stop()
        thread.join(timeout=60)
        store.close()
        own.close()


def test_a_tenant_deleted_on_the_primary_is_withdrawn_and_can_come_back(
    make_tenant: Callable[..., TenantConfig], redis_client: redis.Redis, tmp_path: Path
) -> None:
    here, there = roots(), _other_roots(tmp_path)
    make_tenant("acme")
    make_tenant("globex")
    publish(redis_client, here)
    fetch(redis_client, there)
    shutil.rmtree(here.tenant_config_path("acme").parent)  # deleted on the primary
    assert publish(redis_client, here) == []
    assert sorted(redis_client.hkeys(CONFIGS)) == ["globex"]
    assert redis_client.smembers(DELETED) == {"acme"}
    assert fetch(redis_client, there) == ["acme"]
    assert list_tenant_ids(there) == ["globex"], "the joined worker's copy is gone"

    make_tenant("acme")  # made again with the same id
    assert publish(redis_client, here) == ["acme"]
    assert redis_client.smembers(DELETED) == set()
    assert fetch(redis_client, there) == ["acme"]
    assert list_tenant_ids(there) == ["acme", "globex"]


def test_a_primary_with_no_tenant_at_all_withdraws_nothing(
    make_tenant: Callable[..., TenantConfig], redis_client: redis.Redis, tmp_path: Path
) -> None:
    make_tenant("acme")
    publish(redis_client, roots())
    empty = roots({"NIKA_OS_CONFIG_DIR": str(tmp_path / "wrong-dir"),
                   "NIKA_OS_DATA_DIR": str(tmp_path / "data")})  # fmt: skip
    assert publish(redis_client, empty) == []
    assert redis_client.hkeys(CONFIGS) == ["acme"] and not redis_client.smembers(DELETED)


def test_the_last_tenant_deleted_on_the_primary_is_withdrawn_too(
    make_tenant: Callable[..., TenantConfig], redis_client: redis.Redis, tmp_path: Path
) -> None:
    """Decision 500: an empty ``tenants/`` dir is a deletion, not a wrong config dir."""
    here, there = roots(), _other_roots(tmp_path)
    make_tenant("acme")
    publish(redis_client, here)
    fetch(redis_client, there)
    assert list_tenant_ids(there) == ["acme"]
    shutil.rmtree(here.tenant_config_path("acme").parent)  # the only tenant, deleted
    assert here.tenants_dir.is_dir() and list_tenant_ids(here) == []
    publish(redis_client, here)
    assert redis_client.hkeys(CONFIGS) == []
    assert redis_client.smembers(DELETED) == {"acme"}
    assert fetch(redis_client, there) == ["acme"]
    assert list_tenant_ids(there) == [], "the joined worker's copy is gone"


def _settled(r: redis.Redis, tenants: list[str]) -> dict[str, str] | None:
    """Who holds each tenant, once each is held and the two workers are at most one apart."""
    holders = {t: str(r.get(lease_key(t)) or "").split("|")[0] for t in tenants}
    counts = [list(holders.values()).count(w) for w in (PRIMARY_ID, JOINED)]
    moving = any(r.exists(f"nika:lease:pin:{t}") for t in tenants)
    if moving or sum(counts) != len(tenants) or abs(counts[0] - counts[1]) > 1:
        return None
    return holders


def _holds(r: redis.Redis, worker_id: str) -> list[str]:
    raw = r.get(alive_key(worker_id))
    return list(json.loads(str(raw))["tenants"]) if raw else []


@pytest.mark.slow
@pytest.mark.embedder
def test_a_deleted_tenant_leaves_the_joined_worker_that_held_it(
    make_tenant: Callable[..., TenantConfig],
    redis_client: redis.Redis,
    redis_url: str,
    tmp_path: Path,
) -> None:
    """Two real `nika serve` on one Redis (decision 455): the tenant deleted on the primary's
    host is given up by the joined worker that held it, its config copy removed there, and no
    worker takes it again; the other tenants are served on, and its shards stay on disk."""
    tenants = [f"tenant{i}" for i in range(6)]
    for t in tenants:
        make_tenant(t)
    cfg_a = Path(os.environ["NIKA_OS_CONFIG_DIR"])
    log = tmp_path / "workers.log"
    procs = [
        _serve(tmp_path / "a", cfg_a, log),
        _serve(tmp_path / "b", tmp_path / "cfg-b", log, "--join", redis_url, "--worker-id", JOINED),
    ]
    client = MemoryClient(redis_client, timeout=60)
    at = datetime(2026, 12, 4, tzinfo=UTC)

    def remember(t: str, i: int) -> None:
        client.remember(RememberRequest(tenant_id=t, text=f"{t} fact {i}: port {9000 + i}",
                                        meta=NikaMeta(timestamp=at, project_id="p")))  # fmt: skip

    def ingested(t: str) -> int:
        return int(redis_client.hget(redis_keys.metrics(t), "ingested") or 0)

    try:
        for w in (PRIMARY_ID, JOINED):
            retry_until(lambda w=w: _sees_both(redis_client, w), timeout=180, interval=0.1,
                        what=f"{w} sees both workers")  # fmt: skip
        for t in tenants:
            remember(t, 0)
        retry_until(lambda: all(ingested(t) == 1 for t in tenants), timeout=120, interval=0.2,
                    what="every tenant's memory stored")  # fmt: skip
        holders = retry_until(lambda: _settled(redis_client, tenants), timeout=120,
                              interval=0.2, what="the tenants settled 3/3")  # fmt: skip
        gone, kept = sorted(t for t, h in holders.items() if h == JOINED)[:2]
        retry_until(lambda: gone in _holds(redis_client, JOINED), timeout=30, interval=0.1,
                    what="the joined worker's heartbeat lists the tenant")  # fmt: skip
        there = _other_roots(tmp_path)
        assert there.tenant_config_path(gone).exists()

        shutil.rmtree(roots().tenant_config_path(gone).parent)  # `rm -r` on the primary's host
        retry_until(lambda: not there.tenant_config_path(gone).exists(), timeout=60,
                    interval=0.1, what="the joined worker's copy removed")  # fmt: skip
        retry_until(lambda: gone not in _holds(redis_client, JOINED), timeout=60, interval=0.1,
                    what="the joined worker gave the deleted tenant up")  # fmt: skip
        assert redis_client.get(lease_key(gone)) is None
        assert gone not in redis_client.smembers(LEASE_TENANTS)
        # The other tenants are served on, the joined worker's included.
        remember(kept, 1)
        retry_until(lambda: ingested(kept) == 2, timeout=60, interval=0.2,
                    what="a tenant of the joined worker still served")  # fmt: skip
        # Several ticks of both workers later, nobody took the deleted tenant back.
        for w in (PRIMARY_ID, JOINED):
            ttl = redis_client.pttl(alive_key(w))  # each beat (a tick) sets the TTL again
            retry_until(lambda w=w, ttl=ttl: redis_client.pttl(alive_key(w)) > ttl, timeout=30,
                        interval=0.05, what=f"{w} ticked again")  # fmt: skip
        assert all(gone not in _holds(redis_client, w) for w in (PRIMARY_ID, JOINED))
        assert redis_client.get(lease_key(gone)) is None
        assert (tmp_path / "b" / "qdrant" / gone).is_dir(), "its memories are not deleted"
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.mark.slow
@pytest.mark.embedder
def test_the_last_tenant_deleted_leaves_the_joined_worker_that_held_it(
    make_tenant: Callable[..., TenantConfig],
    redis_client: redis.Redis,
    redis_url: str,
    tmp_path: Path,
) -> None:
    """Decision 500 with two real `nika serve`: the only tenant, held by the joined worker, is
    deleted on the primary's host; the joined worker removes its copy and gives it up."""
    ids = (f"solo{i}" for i in range(100))
    only = next(t for t in ids if preferred(t, [PRIMARY_ID, JOINED]) == JOINED)
    make_tenant(only)
    log = tmp_path / "workers.log"
    procs = [
        _serve(tmp_path / "a", Path(os.environ["NIKA_OS_CONFIG_DIR"]), log),
        _serve(tmp_path / "b", tmp_path / "cfg-b", log, "--join", redis_url, "--worker-id", JOINED),
    ]
    try:
        for w in (PRIMARY_ID, JOINED):
            retry_until(lambda w=w: _sees_both(redis_client, w), timeout=180, interval=0.1,
                        what=f"{w} sees both workers")  # fmt: skip
        # A first memory: a tenant is leased by the worker its entries reach (a tenant that
        # never had one waits for a periodic pass, a minute).
        at = NikaMeta(timestamp=datetime(2026, 12, 4, tzinfo=UTC))
        req = RememberRequest(tenant_id=only, text="the only fact: port 9000", meta=at)
        MemoryClient(redis_client, timeout=60).remember(req)
        retry_until(lambda: only in _holds(redis_client, JOINED), timeout=60, interval=0.1,
                    what="the joined worker holds the only tenant")  # fmt: skip
        there = _other_roots(tmp_path)
        assert there.tenant_config_path(only).exists()

        shutil.rmtree(roots().tenant_config_path(only).parent)  # the last tenant, `rm -r`
        retry_until(lambda: not there.tenant_config_path(only).exists(), timeout=60,
                    interval=0.1, what="the joined worker's copy removed")  # fmt: skip
        retry_until(lambda: only not in _holds(redis_client, JOINED), timeout=60, interval=0.1,
                    what="the joined worker gave the last tenant up")  # fmt: skip
        assert redis_client.get(lease_key(only)) is None
        assert only not in redis_client.smembers(LEASE_TENANTS)
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
