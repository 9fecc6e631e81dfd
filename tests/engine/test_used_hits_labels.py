"""Hits injected for a prompt and then used in the agent's reply become useful marks in the
tenant's relevance set (source "used"), which the tuner reads; unused hits leave no label."""

from __future__ import annotations

import json

import redis

from nika_tui.services.relevance_log import tuning_dir
from nika_tui.services.used_hits import label_used, note_shown, shown_key
from nika_tui.tuning.relevance import load_set

AT = "2026-12-03T12:00:00+00:00"
IP = ("m-ip", "The staging server moved to 10.0.9.30 last week")
PR = ("m-pr", "Prefer small pull requests and never squash review fixes")


def test_a_used_hit_becomes_a_useful_label(redis_client: redis.Redis, isolated_env: object) -> None:
    note_shown(redis_client, "acme", "s1", "What is the staging IP?", "web", [IP, PR])

    marks = label_used(redis_client, "acme", "s1", "Staging answers on 10.0.9.30.", AT)

    assert [(m["query"], m["useful"], m["source"]) for m in marks] == [
        ("What is the staging IP?", ["m-ip"], "used")
    ]
    [judged] = load_set("acme")
    assert judged.useful == frozenset({"m-ip"}) and not judged.not_useful
    assert judged.project_id == "web"
    # The unused hit is looked at once more (a follow-up turn), then dropped without a label.
    assert label_used(redis_client, "acme", "s1", "Anything else?", AT) == []
    assert not redis_client.exists(shown_key("acme", "s1"))
    lines = (tuning_dir("acme") / "relevance.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["useful"] == ["m-ip"]


def test_other_sessions_are_not_labelled(redis_client: redis.Redis, isolated_env: object) -> None:
    note_shown(redis_client, "acme", "s1", "What is the staging IP?", "", [IP])
    assert label_used(redis_client, "acme", "s2", "Staging answers on 10.0.9.30.", AT) == []
    assert load_set("acme") == []
