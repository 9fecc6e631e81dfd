"""The active-refs script: holders added in Redis itself, expired ones pruned, atomically."""

from __future__ import annotations

import json

import redis

from nika_tui.services import redis_keys
from nika_tui.services.active_refs import hold_refs

FIELD = "t1:m1"


def _holders(r: redis.Redis, field: str = FIELD) -> dict[str, float]:
    raw = r.hget(redis_keys.ACTIVE_REFS, field)
    return json.loads(str(raw)) if raw else {}


def test_a_session_is_added_and_expired_holders_are_pruned(redis_client: redis.Redis) -> None:
    redis_client.hset(redis_keys.ACTIVE_REFS, FIELD, json.dumps({"old": 100.0, "live": 900.0}))

    hold_refs(redis_client, [FIELD, "t1:m2"], "s1", now_s=500.0, ttl_s=60)

    assert _holders(redis_client) == {"live": 900.0, "s1": 560.0}
    assert _holders(redis_client, "t1:m2") == {"s1": 560.0}


def test_an_unreadable_value_is_replaced_not_an_error(redis_client: redis.Redis) -> None:
    redis_client.hset(redis_keys.ACTIVE_REFS, FIELD, "not json")

    hold_refs(redis_client, [FIELD], "s1", now_s=10.0, ttl_s=5)

    assert _holders(redis_client) == {"s1": 15.0}


def test_it_rides_on_a_pipeline_with_other_writes(redis_client: redis.Redis) -> None:
    pipe = redis_client.pipeline(transaction=False)
    pipe.hincrby("nika:test:counter", "n", 1)
    hold_refs(pipe, [FIELD], "s1", now_s=1.0, ttl_s=1)
    pipe.execute()

    assert redis_client.hget("nika:test:counter", "n") == "1"
    assert _holders(redis_client) == {"s1": 2.0}
