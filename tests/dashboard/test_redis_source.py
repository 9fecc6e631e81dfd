"""The real dashboard source against the embedded Redis, with keys written per contracts.md."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis

from nika_tui.dashboard.model import UNREADABLE, BusFilter
from nika_tui.dashboard.redis_source import RedisDashboardSource
from nika_tui.domain.tenant import TenantConfig
from nika_tui.errors import ServiceNotRunning, ValidationFailed
from nika_tui.paths import tenant_data_dir
from nika_tui.services import redis_keys as keys
from nika_tui.services.config_store import save_tenant
from nika_tui.settings import Settings

NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)


def _tenant(env: dict[str, str], tenant_id: str, **kw: object) -> None:
    save_tenant(
        TenantConfig(tenant_id=tenant_id, display_name=tenant_id.title(), **kw),
        Settings.from_env(env).roots,
    )  # type: ignore[arg-type]


def _report(at: datetime, value: float, status: str) -> str:
    return json.dumps(
        {
            "tenant_id": "acme",
            "at": at.isoformat(),
            "metrics": [
                {
                    "name": "duplicate_rate",
                    "value": value,
                    "threshold": 0.05,
                    "status": status,
                    "window": "corpus",
                    "sample_size": 1000,
                    "ci": None,
                    "action": "cleanup cron",
                    "strategy": "",
                }
            ],
        }
    )


@pytest.fixture
def env(isolated_env: dict[str, str], redis_url: str) -> dict[str, str]:
    return {**isolated_env, "REDIS_URL": redis_url}


def test_snapshot_reads_every_key_of_a_live_tenant(
    env: dict[str, str], redis_client: redis.Redis
) -> None:
    _tenant(env, "acme", agent_cli="claude-code")
    r = redis_client
    r.set(keys.SERVICE_HEARTBEAT, str(os.getpid()), ex=30)
    r.hset(
        keys.kernel_state("acme"),
        mapping={
            "state": "waiting-input",
            "state_source": "hook",
            "pid": "42",
            "cli": "claude-code",
            "last_event": "Notification",
            "last_event_at": NOW.isoformat(),
        },
    )
    r.set(keys.kernel_heartbeat("acme"), (NOW - timedelta(seconds=3)).timestamp(), ex=30)
    r.hset(
        keys.working_memory("acme"),
        mapping={
            "fill_percent": "52.5",
            "tokens": "105000",
            "window": "200000",
            "forecast_s": "300",
        },
    )
    r.hset(
        keys.review_queue("acme"),
        "rv-1",
        json.dumps({"id": "rv-1", "old": {"text": "a"}, "new": {"text": "b"}}),
    )
    r.hset(
        keys.confirmations("acme"),
        mapping={
            "c1": json.dumps(
                {
                    "id": "c1",
                    "tenant_id": "acme",
                    "kind": "compact",
                    "title": "t",
                    "detail": "",
                    "created_at": NOW.isoformat(),
                    "status": "pending",
                }
            ),
            "c2": json.dumps(
                {
                    "id": "c2",
                    "tenant_id": "acme",
                    "kind": "purge",
                    "title": "t",
                    "detail": "",
                    "created_at": NOW.isoformat(),
                    "status": "resolved",
                }
            ),
        },
    )
    r.xadd(keys.debt_history("acme"), {"report": _report(NOW - timedelta(hours=6), 0.03, "ok")})
    r.xadd(keys.debt_history("acme"), {"report": _report(NOW, 0.07, "alert")})

    snap = RedisDashboardSource(Settings.from_env(env)).snapshot(NOW)
    assert snap.redis_ok and snap.service_ok and not snap.problems
    row = snap.row("acme")
    assert row is not None
    assert (row.kernel.state, row.kernel.source, row.kernel.pid) == ("waiting-input", "hook", 42)
    assert row.kernel.heartbeat_age_s == pytest.approx(3, abs=0.01) and not row.kernel.stale
    assert (row.fill.percent, row.fill.forecast_s) == (52.5, 300.0)
    assert (row.debt_status, row.debt_worst) == ("alert", "duplicate_rate 0.07")
    assert (row.review_count, row.confirmation_count) == (1, 1)
    assert row.cli == "claude-code" and row.needs_me


def test_a_tenant_without_any_key_is_unknown_not_an_error(env: dict[str, str]) -> None:
    _tenant(env, "fresh")
    snap = RedisDashboardSource(Settings.from_env(env)).snapshot(NOW)
    row = snap.row("fresh")
    assert row is not None
    assert (
        row.kernel.state == "unknown" and row.fill.percent is None and row.debt_status == "unknown"
    )
    assert not snap.service_ok and "memory service down" in snap.problems[0]


def test_unreadable_payloads_make_unreadable_rows(
    env: dict[str, str], redis_client: redis.Redis
) -> None:
    _tenant(env, "bad")
    r = redis_client
    r.hset(keys.kernel_state("bad"), mapping={"state": "\x00garbage"})
    r.hset(keys.working_memory("bad"), mapping={"fill_percent": "lots"})
    r.set(keys.review_queue("bad"), "not a hash")  # wrong key type
    r.xadd(keys.debt_history("bad"), {"report": "{not json"})
    r.hset(keys.confirmations("bad"), "x", "???")
    src = RedisDashboardSource(Settings.from_env(env))
    row = src.snapshot(NOW).row("bad")
    assert row is not None
    assert row.kernel.state == UNREADABLE
    assert row.fill.unreadable
    assert row.debt_worst == UNREADABLE
    assert "review unreadable" in row.problems
    assert row.confirmation_count == 1  # an unreadable confirmation still asks for a look
    items = src.review_items("bad")
    assert items == []  # wrong type: empty, not a crash
    r.delete(keys.review_queue("bad"))
    r.hset(keys.review_queue("bad"), "rv-x", "{broken")
    (item,) = src.review_items("bad")
    assert item.unreadable and item.raw == "{broken"


def test_unreadable_tenant_config_still_gets_a_row(env: dict[str, str]) -> None:
    _tenant(env, "ok")
    broken = Path(env["NIKA_OS_CONFIG_DIR"]) / "tenants" / "broken" / "config.yaml"
    broken.parent.mkdir(parents=True)
    broken.write_text("tenant_id: [unclosed\n")
    snap = RedisDashboardSource(Settings.from_env(env)).snapshot(NOW)
    row = snap.row("broken")
    assert row is not None and row.display_name == UNREADABLE
    assert any("config unreadable" in p for p in row.problems)


def test_redis_down_then_back_recovers_by_itself(isolated_env: dict[str, str]) -> None:
    from nika_tui.paths import roots
    from nika_tui.services.redis_server import ensure_embedded, stop_embedded

    _tenant(isolated_env, "acme")
    src = RedisDashboardSource(
        Settings.from_env(isolated_env)
    )  # embedded Redis of this data dir, not started
    down = src.snapshot(NOW)
    assert not down.redis_ok and "Redis unreachable" in down.problems[0]
    assert down.row("acme") is not None  # the rows from the configs stay
    try:
        url = ensure_embedded(roots(isolated_env))
        redis.Redis.from_url(url, decode_responses=True).hset(
            keys.kernel_state("acme"), mapping={"state": "idle"}
        )
        up = src.snapshot(NOW)
        assert up.redis_ok
        assert up.row("acme").kernel.state == "idle"  # type: ignore[union-attr]
    finally:
        stop_embedded(roots(isolated_env))


def test_actions_needing_the_service_say_it_is_down(env: dict[str, str]) -> None:
    _tenant(env, "acme")
    src = RedisDashboardSource(Settings.from_env(env))
    for call in (
        lambda: src.recall("acme", "x"),
        lambda: src.purge_plan("acme"),
        lambda: src.run_audit("acme"),
        lambda: src.resolve_review("acme", "rv", "replace"),
    ):
        with pytest.raises(ServiceNotRunning, match="memory service is not running"):
            call()
    assert src.resolve_review("acme", "rv", "skip").startswith("skipped")
    detail = src.tenant_detail("acme", NOW)
    assert any("memory counts unavailable" in p for p in detail.problems)


def test_purge_refuses_a_wrong_tenant_id_before_calling_anything(env: dict[str, str]) -> None:
    calls: list[str] = []
    src = RedisDashboardSource(
        Settings.from_env(env),
        rpc=lambda op, body, t: calls.append(op) or {"removed": [{}, {}], "skipped": [{}]},
    )
    with pytest.raises(ValidationFailed, match="does not match"):
        src.apply_purge("acme", "acm")
    assert calls == []
    result = src.apply_purge("acme", "acme")
    assert (result.removed, result.skipped, calls) == (2, 1, ["purge.apply"])


def test_rpc_replies_are_parsed(env: dict[str, str]) -> None:
    replies = {
        "stats": {"counts": {"semantic": {"current": 3, "retired": 1}}},
        "purge.plan": {
            "items": [
                {"memory_id": "m1", "replacement_id": "m2", "blocked_by": ["s1"]},
                {"memory_id": "m3"},
            ]
        },
        "recall": {"query": "q", "tenant_id": "acme", "hits": [], "palace": "no memory for q"},
    }
    _tenant(env, "acme", knowledge_repo="git@example:k.git")
    src = RedisDashboardSource(Settings.from_env(env), rpc=lambda op, body, t: replies[op])
    detail = src.tenant_detail("acme", NOW)
    assert detail.memory_counts == {"semantic": {"current": 3, "retired": 1}}
    assert detail.strategies == ("compress_to_repo",) and detail.recommendation is None
    plan = src.purge_plan("acme")
    assert (plan.dry_run_count, plan.blocked_count) == (1, 1)
    assert src.recall("acme", "q").palace == "no memory for q"


def test_detail_reads_fill_history_and_compactions(
    env: dict[str, str], redis_client: redis.Redis
) -> None:
    _tenant(env, "acme")
    for i, fill in enumerate((20, 40, 62, 15)):
        redis_client.xadd(
            keys.fill_history("acme"),
            {"at": (NOW + timedelta(minutes=i)).isoformat(), "fill": str(fill), "tokens": "1"},
        )
    redis_client.xadd(
        keys.compactions("acme"),
        {
            "at": (NOW + timedelta(minutes=2, seconds=30)).isoformat(),
            "trigger": "auto",
            "fill": "62",
        },
    )
    detail = RedisDashboardSource(Settings.from_env(env), rpc=lambda *a: {}).tenant_detail(
        "acme", NOW
    )
    assert [f for _, f in detail.row.fill.history] == [20, 40, 62, 15]
    assert [c.trigger for c in detail.row.fill.compactions] == ["auto"]


def test_bus_tail_follows_appends_and_keeps_raw_lines(env: dict[str, str]) -> None:
    from nika_tui.services.bus import open_bus

    _tenant(env, "acme")
    _tenant(env, "beta")
    bus = open_bus("acme", Settings.from_env(env).roots)
    bus.append("memory.ingested", {"memory_id": "m1"}, now=NOW)
    src = RedisDashboardSource(Settings.from_env(env))
    first = src.bus_tail(BusFilter(), None)
    assert [ln.kind for ln in first.lines] == ["memory.ingested"]
    again = src.bus_tail(BusFilter(), first.cursor)
    assert again.lines == ()
    bus.append("review.requested", {"review_id": "r1"}, now=NOW)
    path = tenant_data_dir("acme", env) / "bus" / f"{NOW.date().isoformat()}.jsonl"
    with path.open("a") as fh:
        fh.write("{half a line\n")
    more = src.bus_tail(BusFilter(), again.cursor)
    assert [ln.kind for ln in more.lines if not ln.unreadable] == ["review.requested"]
    assert [ln.raw for ln in more.lines if ln.unreadable] == ["{half a line"]
    assert src.bus_tail(BusFilter(tenant="beta"), None).lines == ()


@pytest.mark.tmux
@pytest.mark.slow
def test_kernel_actions_through_the_real_kernel_manager(
    env: dict[str, str], redis_client: redis.Redis
) -> None:
    from nika_tui.engine.kernels.manager import KernelManager

    _tenant(env, "acme")  # agent_cli: shell
    src = RedisDashboardSource(Settings.from_env(env), child_env=env)
    try:
        assert src.spawn("acme") == "spawned nika-tenant-acme"
        assert KernelManager(Settings.from_env(env), child_env=env).is_running("acme")
        row = src.snapshot(datetime.now(UTC)).row("acme")
        assert row is not None and row.kernel.state != "unknown" and not row.kernel.stale
        argv = src.attach_argv("acme")
        assert argv[1:3] == ["-L", env["NIKA_TMUX_SOCKET"]] and argv[-1].endswith(
            "nika-tenant-acme"
        )
        assert src.stop("acme") == "stopped nika-tenant-acme"
        assert not KernelManager(Settings.from_env(env), child_env=env).is_running("acme")
        assert src.pane_preview("acme", 10) == ""  # nothing to show once stopped
    finally:
        import subprocess

        subprocess.run(
            ["tmux", "-L", env["NIKA_TMUX_SOCKET"], "kill-server"], capture_output=True, check=False
        )


def test_review_items_in_the_engine_shape_and_decisions(
    env: dict[str, str], redis_client: redis.Redis
) -> None:
    base = {
        "tenant_id": "acme",
        "layer": "semantic",
        "reason": "hedged",
        "judge": "rules",
        "old_valid_from": NOW.isoformat(),
        "new_valid_from": NOW.isoformat(),
    }
    redis_client.hset(
        keys.review_queue("acme"),
        mapping={
            "rv-1": json.dumps(
                {
                    **base,
                    "id": "rv-1",
                    "old_id": "m1",
                    "new_id": "m2",
                    "old_text": "old",
                    "new_text": "new",
                    "created_at": NOW.isoformat(),
                    "status": "pending",
                }
            ),
            "rv-2": json.dumps(
                {
                    **base,
                    "id": "rv-2",
                    "old_id": "m3",
                    "new_id": "m4",
                    "old_text": "o",
                    "new_text": "n",
                    "created_at": NOW.isoformat(),
                    "status": "approved",
                }
            ),
        },
    )
    calls: list[tuple[str, dict[str, object]]] = []

    def rpc(op: str, body: dict[str, object], timeout: float) -> dict[str, object]:
        calls.append((op, body))
        if op == "history":
            return {
                "records": [
                    {
                        "id": body["memory_id"],
                        "meta": {"session_id": "s-9", "agent_type": "codex", "parent_id": "t-3"},
                    }
                ]
            }
        return {}

    src = RedisDashboardSource(Settings.from_env(env), rpc=rpc)
    (item,) = src.review_items("acme")  # the resolved pair is not shown
    assert (item.old.text, item.new.text, item.reason) == ("old", "new", "hedged")
    assert (item.new.session, item.new.agent, item.new.turn) == ("s-9", "codex", "t-3")
    calls.clear()
    src.resolve_review("acme", "rv-1", "replace")
    src.resolve_review("acme", "rv-1", "keep")
    assert calls == [
        ("review.resolve", {"tenant_id": "acme", "id": "rv-1", "decision": "approve"}),
        # "keep both" is sent (and logged by the engine) as keep, not reject (issue 17).
        ("review.resolve", {"tenant_id": "acme", "id": "rv-1", "decision": "keep"}),
    ]


def test_purge_plan_marks_items_held_by_active_refs(
    env: dict[str, str], redis_client: redis.Redis
) -> None:
    import time

    redis_client.hset(
        keys.ACTIVE_REFS,
        mapping={
            "acme:m1": json.dumps({"s-live": time.time() + 600, "s-old": time.time() - 600}),
            "acme:m2": json.dumps({"s-old": time.time() - 600}),
        },
    )
    reply = {
        "tenant_id": "acme",
        "items": [
            {
                "id": "m1",
                "layer": "semantic",
                "reason": "superseded",
                "replacement_id": "m9",
                "retired_at": None,
                "text": "a",
            },
            {
                "id": "m2",
                "layer": "semantic",
                "reason": "superseded",
                "replacement_id": "m8",
                "retired_at": None,
                "text": "b",
            },
        ],
        "count": 2,
    }
    plan = RedisDashboardSource(Settings.from_env(env), rpc=lambda *a: reply).purge_plan("acme")
    assert [i.blocked_by for i in plan.items] == [("s-live",), ()]
    assert plan.dry_run_count == 1 and plan.items[0].replacement_id == "m9"
