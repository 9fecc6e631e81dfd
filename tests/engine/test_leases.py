"""Tenant leases on the real embedded Redis: one holder, expiry, fencing of a lost holder."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from nika_tui.engine.leases import Lease, Leases, lease_key
from nika_tui.engine.worker import Worker
from nika_tui.engine.worker_keys import preferred
from nika_tui.errors import NikaError
from nika_tui.scale.workers import join_url, lease_ttl, workers_status
from nika_tui.services import redis_keys
from nika_tui.settings import Settings
from tests.helpers import retry_until

GROUP = redis_keys.INGEST_GROUP


def test_one_holder_then_takeover_after_expiry_with_a_new_epoch(redis_client: redis.Redis) -> None:
    a, b = Leases(redis_client, "wa", 1), Leases(redis_client, "wb", 1)
    first = a.acquire("acme")
    assert first is not None and first.token == "wa|1"
    assert b.acquire("acme") is None
    assert a.renew(first)
    assert b.holders(["acme", "other"]) == {"acme": "wa", "other": None}
    retry_until(lambda: not redis_client.exists(lease_key("acme")), timeout=5, what="expiry")
    second = b.acquire("acme")
    assert second is not None and second.token == "wb|2"
    assert not a.renew(first), "an expired lease must not be renewed over the new holder"
    a.release(first)  # not ours any more: a no-op
    assert redis_client.get(lease_key("acme")) == "wb|2"
    assert b.known_tenants() == ["acme"]


def test_a_lost_holder_can_never_acknowledge(redis_client: redis.Redis) -> None:
    stream = redis_keys.INGEST_STREAM
    redis_client.xgroup_create(stream, GROUP, id="0", mkstream=True)
    entry = redis_client.xadd(stream, {"req": "{}"})
    redis_client.xreadgroup(GROUP, "wa", {stream: ">"})
    a, b = Leases(redis_client, "wa", 1), Leases(redis_client, "wb", 30)
    stale = a.acquire("acme")
    assert stale is not None
    retry_until(lambda: b.acquire("acme") is not None, timeout=5, what="takeover")
    done = [("nika:done:x", '{"id": "1"}')]
    assert not a.fenced_ack(stale, stream, GROUP, [entry], done, 60)
    assert redis_client.xlen(stream) == 1 and not redis_client.exists("nika:done:x")
    assert int(redis_client.xpending(stream, GROUP)["pending"]) == 1
    holder = Lease("acme", str(redis_client.get(lease_key("acme"))), 0)
    assert b.fenced_ack(holder, stream, GROUP, [entry], done, 60)
    assert redis_client.xlen(stream) == 0 and redis_client.lrange("nika:done:x", 0, -1)


def test_free_tenants_spread_by_rendezvous_and_entries_are_handed_to_holders(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    stream = redis_keys.INGEST_STREAM
    redis_client.xgroup_create(stream, GROUP, id="0", mkstream=True)
    wa = Worker(redis_client, "wa", tmp_path / "a", None, ttl_s=30)
    wb = Worker(redis_client, "wb", tmp_path / "b", None, ttl_s=30)
    wa.tick(GROUP, force=True)
    wb.tick(GROUP, force=True)
    wa.tick(GROUP, force=True)
    tenants = [f"t{i}" for i in range(12)]
    owners = {t: preferred(t, ["wa", "wb"]) for t in tenants}
    assert set(owners.values()) == {"wa", "wb"}
    ids = {t: redis_client.xadd(stream, {"t": t}) for t in tenants}
    redis_client.xreadgroup(GROUP, "wa", {stream: ">"})  # wa reads every entry
    kept, waiting = wa.keep(stream, GROUP, [(ids[t], t) for t in tenants])
    assert not waiting
    assert kept == {ids[t] for t in tenants if owners[t] == "wa"}
    mine = {str(p["message_id"]) for p in redis_client.xpending_range(
        stream, GROUP, "-", "+", 100, consumername="wb")}  # fmt: skip
    assert mine == {ids[t] for t in tenants if owners[t] == "wb"}, "handed to wb, unacknowledged"
    assert wb.tick(GROUP, force=True), "the inbox tells wb to drain"
    kept_b, _ = wb.keep(stream, GROUP, [(ids[t], t) for t in tenants if owners[t] == "wb"])
    assert kept_b == mine and set(wb.held) == {t for t in tenants if owners[t] == "wb"}
    rows = {row["id"]: row for row in workers_status(redis_client)}
    assert rows["wb"]["live"] and len(rows["wb"]["leases"]) == len(wb.held)


def test_join_url_and_ttl_refuse_bad_input(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("s3cr/t\n")
    settings = Settings.from_env({"NIKA_REDIS_PASSWORD_FILE": str(secret)})
    assert join_url("redis://10.0.0.2:6379/0", settings) == "redis://:s3cr%2Ft@10.0.0.2:6379/0"
    with pytest.raises(NikaError, match="--join is not a Redis URL"):
        join_url("http://x", Settings.from_env({}))
    missing = Settings.from_env({"NIKA_REDIS_PASSWORD_FILE": str(tmp_path / "none")})
    with pytest.raises(NikaError, match="password file"):
        join_url("redis://h:1/0", missing)
    with pytest.raises(NikaError, match="NIKA_LEASE_TTL_S"):
        lease_ttl(Settings.from_env({"NIKA_LEASE_TTL_S": "0"}))
    assert lease_ttl(Settings.from_env({})) == 15.0


def test_a_restarted_worker_reclaims_its_own_leases_without_waiting(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    dead = Leases(redis_client, "wa", 60)
    assert dead.acquire("acme") is not None
    other = Leases(redis_client, "wb", 60)
    assert other.acquire("beta") is not None
    restarted = Worker(redis_client, "wa", tmp_path / "a", None, ttl_s=60)
    restarted.tick(redis_keys.INGEST_GROUP, force=True)
    assert set(restarted.held) == {"acme"}, "beta belongs to a live worker of another id"
    assert redis_client.get(lease_key("acme")) == "wa|2"
    assert restarted.leases.reclaim("beta") is None


def test_cli_scale_workers_lists_workers_and_their_leases(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    import json
    import os
    import subprocess
    import sys

    wa = Worker(redis_client, "wa", tmp_path / "a", None, ttl_s=60)
    wa.tick(GROUP, force=True)
    assert wa.route("acme") == "wa"
    out = subprocess.run(
        [sys.executable, "-m", "nika_tui", "scale", "workers", "--json"],
        capture_output=True, text=True, env=dict(os.environ), check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["workers"]
    assert rows[0]["id"] == "wa" and rows[0]["live"] is True
    assert [lease["tenant"] for lease in rows[0]["leases"]] == ["acme"]
    assert rows[0]["leases"][0]["epoch"] == 1 and rows[0]["data_dir"] == str(tmp_path / "a")
