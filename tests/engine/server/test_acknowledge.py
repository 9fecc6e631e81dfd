"""``acknowledge``: the reply, the entry's ack and the writes that ride behind the reply."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis

from nika_tui.engine.server.rpc import acknowledge
from nika_tui.services import redis_keys


@pytest.fixture
def entry(redis_client: redis.Redis) -> str:
    redis_client.xgroup_create(redis_keys.RPC_STREAM, redis_keys.RPC_GROUP, id="0", mkstream=True)
    entry_id = str(redis_client.xadd(redis_keys.RPC_STREAM, {"op": "recall", "id": "req-1"}))
    redis_client.xreadgroup(redis_keys.RPC_GROUP, "reader", {redis_keys.RPC_STREAM: ">"})
    return entry_id


def _reply(r: redis.Redis) -> Any:
    raw = r.lpop(redis_keys.rpc_reply("req-1"))
    return json.loads(str(raw)) if raw else None


def test_the_writes_behind_a_reply_go_in_its_round_trip(
    redis_client: redis.Redis, entry: str
) -> None:
    def count(pipe: Any) -> None:
        pipe.hincrby("nika:test:after", "n", 1)

    acknowledge(redis_client, entry, "req-1", {"ok": True}, [count, count])

    assert _reply(redis_client) == {"ok": True}
    assert redis_client.hget("nika:test:after", "n") == "2"
    assert redis_client.xpending(redis_keys.RPC_STREAM, redis_keys.RPC_GROUP)["pending"] == 0


def test_a_failing_write_behind_the_reply_costs_neither_the_reply_nor_the_ack(
    redis_client: redis.Redis, entry: str
) -> None:
    def broken(_pipe: Any) -> None:
        raise RuntimeError("cannot build the log")

    def wrong_type(pipe: Any) -> None:
        pipe.hincrby("nika:test:after", "n", 1)  # a hash: the next command fails in Redis
        pipe.lpush("nika:test:after", "x")

    acknowledge(redis_client, entry, "req-1", {"ok": True}, [broken, wrong_type])

    assert _reply(redis_client) == {"ok": True}
    assert redis_client.hget("nika:test:after", "n") == "1"
    assert redis_client.xpending(redis_keys.RPC_STREAM, redis_keys.RPC_GROUP)["pending"] == 0
