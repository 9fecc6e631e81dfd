"""The purge doctrine: replacement first, active refs respected, archive then delete, bus log,
restore; and a recall running during a purge sees the old or the new, never neither."""

from __future__ import annotations

import json
import random
import threading
from datetime import datetime, timedelta

import pytest

from nika_tui.domain.memory import Layer, MemoryRecord, Status
from nika_tui.domain.requests import RecallQuery
from nika_tui.domain.tenant import AutoActions, AutoMode
from nika_tui.engine.context import EngineContext
from nika_tui.engine.purge import Archive, apply, archive_dir, plan, restore
from nika_tui.engine.recall import recall, register_refs
from nika_tui.errors import ConfirmationRequired
from nika_tui.services.config_store import load_tenant, save_tenant
from nika_tui.services.redis_keys import confirmations
from tests.helpers import retry_until
from tests.plugins.debt import T0, FixedClock, make_record, put, unit

TENANT = "acme"


def _retired(
    text: str, by: str | None, days_ago: float, now: datetime, reason: str = "rules: newer value"
) -> MemoryRecord:
    at = now - timedelta(days=days_ago)
    return make_record(
        TENANT,
        text,
        status=Status.RETIRED,
        superseded_by=by,
        retired_at=at,
        retire_reason=reason,
        valid_from=at - timedelta(days=10),
    )


def _seed(ctx: EngineContext) -> dict[str, MemoryRecord]:
    rng = random.Random(2)
    now = ctx.clock()
    new = make_record(TENANT, "The staging server is beta.internal")
    recs = {
        "new": new,
        "old": _retired("The staging server is alpha.internal", new.id, 40, now),
        "recent": _retired("The staging server is zeta.internal", new.id, 5, now),
        "dup": _retired(
            "The staging server is beta.internal.", new.id, 0.1, now, "rem: merged duplicate of x"
        ),
        "orphan": _retired(
            "Lunch is at noon", None, 60, now, "rem: the hierarchy marks J obsolete"
        ),
    }
    put(ctx, [(r, unit(rng)) for r in recs.values()])
    return recs


def _autonomous(mode: AutoMode = AutoMode.AUTONOMOUS) -> None:
    config = load_tenant(TENANT)
    save_tenant(config.model_copy(update={"auto_actions": AutoActions(purge=mode)}))


def test_plan_lists_what_would_leave_with_replacements(debt_ctx: EngineContext) -> None:
    recs = _seed(debt_ctx)
    p = plan(debt_ctx, TENANT)
    items = {i.id: i for i in p.items}
    assert set(items) == {recs["old"].id, recs["dup"].id, recs["orphan"].id}
    assert items[recs["old"].id].reason == "superseded"
    assert items[recs["old"].id].replacement_id == recs["new"].id
    assert items[recs["dup"].id].reason == "merged_duplicate"  # no retention for duplicates
    assert items[recs["orphan"].id].replacement_id is None
    assert p.not_yet == 1  # "recent" is inside the 30-day retention
    assert debt_ctx.vectors.count(TENANT, Layer.SEMANTIC) == 5  # planning changes nothing


@pytest.mark.parametrize("mode", [AutoMode.ESCALATE, AutoMode.OFF])
def test_apply_needs_confirmation_unless_autonomous(
    debt_ctx: EngineContext, mode: AutoMode
) -> None:
    _seed(debt_ctx)
    _autonomous(mode)
    with pytest.raises(ConfirmationRequired):
        apply(debt_ctx, TENANT)
    with pytest.raises(ConfirmationRequired):
        apply(debt_ctx, TENANT)
    assert debt_ctx.vectors.count(TENANT, Layer.SEMANTIC) == 5
    queued = [json.loads(v) for v in debt_ctx.redis.hgetall(confirmations(TENANT)).values()]
    # escalate queues one confirmation for a person (not one per refusal); off queues none
    assert [q["kind"] for q in queued] == (["purge.apply"] if mode is AutoMode.ESCALATE else [])
    assert apply(debt_ctx, TENANT, confirmed=True).removed


def test_apply_archives_deletes_and_logs(debt_ctx: EngineContext) -> None:
    recs = _seed(debt_ctx)
    _autonomous()
    before = {
        p.id: p for p in debt_ctx.vectors.retrieve(TENANT, Layer.SEMANTIC, [recs["old"].id], True)
    }
    result = apply(debt_ctx, TENANT)
    removed = {r["id"]: r for r in result.removed}
    assert set(removed) == {recs["old"].id, recs["dup"].id, recs["orphan"].id}
    assert removed[recs["old"].id]["replacement_id"] == recs["new"].id
    live = {p.id for p in debt_ctx.vectors.scroll(TENANT, Layer.SEMANTIC)}
    assert live == {recs["new"].id, recs["recent"].id}
    # archive: one 0600 JSONL line per removed point, with its vector and payload
    files = list(archive_dir(TENANT).glob("*.jsonl"))
    assert len(files) == 1 and oct(files[0].stat().st_mode & 0o777) == "0o600"
    entries = {e["id"]: e for e in Archive(archive_dir(TENANT)).entries()}
    assert set(entries) == set(removed)
    old = entries[recs["old"].id]
    assert old["vector"] == pytest.approx(list(before[recs["old"].id].vector or []))
    assert old["payload"]["text"] == recs["old"].text
    # bus: purge.removed with reason, timestamp and replacement id
    lines = [x.data for x in debt_ctx.bus(TENANT).read() if x.data]
    purged = {d["body"]["memory_id"]: d["body"] for d in lines if d["kind"] == "purge.removed"}
    assert set(purged) == set(removed)
    body = purged[recs["old"].id]
    assert body["reason"] == "superseded"
    assert body["replacement_id"] == recs["new"].id
    assert body["timestamp"] == debt_ctx.clock().isoformat()


def test_active_reference_is_skipped_and_its_session_named(debt_ctx: EngineContext) -> None:
    recs = _seed(debt_ctx)
    _autonomous()
    now = debt_ctx.clock().timestamp()
    register_refs(debt_ctx.redis, TENANT, "sess-9", [recs["old"].id], now)
    result = apply(debt_ctx, TENANT)
    [skipped] = result.skipped
    assert skipped == {
        "id": recs["old"].id,
        "why": "held by an active session",
        "sessions": ["sess-9"],
    }
    assert debt_ctx.vectors.retrieve(TENANT, Layer.SEMANTIC, [recs["old"].id])
    # once the reference expires the next purge removes it
    debt_ctx.clock = FixedClock(debt_ctx.clock() + timedelta(hours=2))
    assert [r["id"] for r in apply(debt_ctx, TENANT).removed] == [recs["old"].id]


def test_missing_replacement_blocks_the_purge(debt_ctx: EngineContext) -> None:
    _autonomous()
    rec = _retired("The queue is RabbitMQ", "0b0c9a8e-1b7f-4c57-a0a2-3f2b0d6f4a11", 40, T0)
    put(debt_ctx, [(rec, unit(random.Random(1)))])
    result = apply(debt_ctx, TENANT)
    assert not result.removed
    assert result.skipped[0]["id"] == rec.id
    assert "not current" in result.skipped[0]["why"]


def test_replacement_chain_and_archived_replacement(debt_ctx: EngineContext) -> None:
    _autonomous()
    rng = random.Random(3)
    now = debt_ctx.clock()
    head = make_record(TENANT, "The broker is NATS")
    mid = _retired("The broker is Kafka", head.id, 1, now)  # retired recently: stays
    old = _retired("The broker is RabbitMQ", mid.id, 40, now)
    put(debt_ctx, [(head, unit(rng)), (mid, unit(rng)), (old, unit(rng))])
    # the head was archived earlier (e.g. a previous purge): it must be indexed back first
    head_vec = debt_ctx.vectors.retrieve(TENANT, Layer.SEMANTIC, [head.id], True)[0]
    Archive(archive_dir(TENANT)).write(
        {"id": head.id, "layer": "semantic", "vector": list(head_vec.vector or []),
         "payload": dict(head_vec.payload)},
        "2026-11-01",
    )  # fmt: skip
    debt_ctx.vectors.delete(TENANT, Layer.SEMANTIC, [head.id])
    result = apply(debt_ctx, TENANT)
    assert result.restored_replacements == [head.id]
    assert result.removed == [{"id": old.id, "reason": "superseded", "replacement_id": head.id}]
    assert debt_ctx.vectors.retrieve(TENANT, Layer.SEMANTIC, [head.id])


def test_restore_puts_points_back(debt_ctx: EngineContext) -> None:
    recs = _seed(debt_ctx)
    _autonomous()
    original = debt_ctx.vectors.retrieve(TENANT, Layer.SEMANTIC, [recs["old"].id], True)[0]
    apply(debt_ctx, TENANT)
    assert restore(debt_ctx, TENANT, [recs["old"].id]) == [recs["old"].id]
    back = debt_ctx.vectors.retrieve(TENANT, Layer.SEMANTIC, [recs["old"].id], True)[0]
    assert dict(back.payload) == dict(original.payload)
    assert back.vector == pytest.approx(list(original.vector or []))
    assert restore(debt_ctx, TENANT, [recs["old"].id]) == []  # already live: nothing to do
    kinds = [x.data["kind"] for x in debt_ctx.bus(TENANT).read() if x.data]
    assert kinds.count("purge.restored") == 1
    restored_all = restore(debt_ctx, TENANT)
    assert set(restored_all) == {recs["dup"].id, recs["orphan"].id}


SERVICES = ["billing", "search", "checkout", "telemetry", "invoicing", "mailer", "auth", "ledger"]


@pytest.mark.embedder
def test_recall_during_purge_sees_old_or_new(engine_ctx: EngineContext, make_tenant) -> None:  # type: ignore[no-untyped-def]
    make_tenant(TENANT)
    _autonomous()
    engine_ctx.clock = FixedClock(T0 + timedelta(days=60))
    now = engine_ctx.clock()
    olds, news = [], []
    for i, name in enumerate(SERVICES):
        new = make_record(TENANT, f"The {name} service listens on port {7000 + i}")
        old = _retired(f"The {name} service listens on port {5000 + i}", new.id, 40, now)
        olds.append(old)
        news.append(new)
    texts = [r.text for r in olds + news]
    vecs = engine_ctx.embedder.embed(texts)
    put(engine_ctx, list(zip(olds + news, vecs, strict=True)))
    # half of the replacements are not in the live index (archived): purge must index them first
    archived = news[4:]
    for rec, vec in zip(archived, vecs[12:], strict=True):
        Archive(archive_dir(TENANT)).write(
            {"id": rec.id, "layer": "semantic", "vector": vec, "payload": rec.to_payload()},
            "2026-11-01",
        )
    engine_ctx.vectors.delete(TENANT, Layer.SEMANTIC, [r.id for r in archived])

    stop = threading.Event()
    failures: list[str] = []
    rounds = {"recall": 0, "lookup": 0}

    def recaller() -> None:  # agents' recalls: current memories of the live topics
        while not stop.is_set():
            for i in range(4):
                q = RecallQuery(tenant_id=TENANT, query=f"which port does {SERVICES[i]} use?")
                ids = {h.record.id for h in recall(engine_ctx, q).hits}
                if not ids & {olds[i].id, news[i].id}:
                    failures.append(f"recall {SERVICES[i]}: neither")
            rounds["recall"] += 1

    def looker() -> None:  # history-style lookups of both versions of every topic
        while not stop.is_set():
            for old, new in zip(olds, news, strict=True):
                if not engine_ctx.vectors.retrieve(TENANT, Layer.SEMANTIC, [old.id, new.id]):
                    failures.append(f"lookup {old.text}: neither")
            rounds["lookup"] += 1
            # Pace the lookups: a tight loop of store calls holds the GIL so long that the
            # recaller's embedder (hundreds of torch ops, each re-taking the GIL) starves.
            stop.wait(0.002)

    threads = [threading.Thread(target=recaller), threading.Thread(target=looker)]
    for t in threads:
        t.start()
    try:
        retry_until(
            lambda: rounds["recall"] and rounds["lookup"], timeout=60, what="both readers running"
        )
        start = dict(rounds)
        result = apply(engine_ctx, TENANT)
        retry_until(
            lambda: rounds["recall"] > start["recall"] + 1 and rounds["lookup"] > start["lookup"],
            timeout=60,
            what="readers after the purge",
        )
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert failures == []
    assert {r["id"] for r in result.removed} == {r.id for r in olds}
    assert sorted(result.restored_replacements) == sorted(r.id for r in archived)
    assert json.dumps(result.to_dict())
