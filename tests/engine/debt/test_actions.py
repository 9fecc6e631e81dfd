"""The debt actions really act: each executor on real stores (Redis, Qdrant Edge, tmux, bus)."""

from __future__ import annotations

import gzip
import json
import random
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from nika_tui.domain.debt_tables import INSUFFICIENT_SAMPLE
from nika_tui.domain.judge_rules import RulesJudge
from nika_tui.domain.kernel_state import KernelState, StateSource
from nika_tui.domain.memory import Layer
from nika_tui.domain.requests import RecallQuery
from nika_tui.domain.tenant import (
    AgentCli,
    AutoActions,
    AutoMode,
    JudgeConfig,
    JudgeKind,
    KernelConfig,
    Privacy,
)
from nika_tui.domain.verdicts import Fact
from nika_tui.engine.audit.measure import measure
from nika_tui.engine.context import EngineContext
from nika_tui.engine.debt.actions import apply_action, apply_confirmation
from nika_tui.engine.debt.run import run_audit
from nika_tui.engine.kernels.manager import KernelManager
from nika_tui.engine.recall import recall
from nika_tui.engine.review import ReviewItem, ReviewStatus
from nika_tui.errors import ValidationFailed
from nika_tui.services import confirmation_queue, kernel_store, redis_keys
from nika_tui.services.config_store import load_tenant, save_tenant
from tests.helpers import retry_until
from tests.plugins.debt import T0, make_record, put, unit

if TYPE_CHECKING:  # libtmux is imported by the tmux fixture at use (issue 12)
    import libtmux

TENANT = "acme"
STANDIN = [sys.executable, "-m", "nika_tui.assets.standin_agent"]


def _configure(**update: Any) -> None:
    save_tenant(load_tenant(TENANT).model_copy(update=update))


def _bus(ctx: EngineContext) -> list[dict[str, Any]]:
    return [line.data for line in ctx.bus(TENANT).read() if line.data is not None]


# --- minimum sample of the query-log metrics -------------------------------------------------
def test_one_query_cannot_alert_or_pause_ingestion(debt_ctx: EngineContext) -> None:
    rng = random.Random(1)
    rec = make_record(TENANT, "a fact of another project", project_id="p2")
    put(debt_ctx, [(rec, unit(rng))])
    debt_ctx.redis.xadd(
        redis_keys.query_log(TENANT),
        {"at": T0.isoformat(), "query": "q", "session_id": "s", "project_id": "p1",
         "filters": "{}", "ids": json.dumps([rec.id]), "cosines": "[0.1]"},
    )  # fmt: skip
    outcome = run_audit(debt_ctx, TENANT, seed=1)
    for name in ("rag_offtopic_rate", "cross_project_leakage"):
        m = outcome.report.metric(name)
        assert m.value == 1.0  # 100 % of one chunk: would be critical without the minimum
        assert m.status.value == "insufficient" and m.note.startswith(INSUFFICIENT_SAMPLE)
    assert outcome.to_dict()["metrics"][0]["note"] == "insufficient data: n=1 of the 10 needed"
    assert not outcome.report.critical
    assert not outcome.ingest_paused
    assert debt_ctx.redis.get(redis_keys.ingest_paused(TENANT)) is None


# --- rotate_logs -------------------------------------------------------------------------------
def test_rotate_logs_archives_past_days_and_reading_stays_the_same(
    debt_ctx: EngineContext,
) -> None:
    bus = debt_ctx.bus(TENANT)
    bus.max_bytes = 4000  # force rotated parts on the older day
    now = debt_ctx.clock()
    for days in (2, 1, 0):
        for i in range(30):
            bus.append("kernel.event", {"i": i, "pad": "x" * 200}, now=now - timedelta(days=days))
    before = [line.raw for line in bus.read()]
    sizes = {d: bus.bytes_on((now - timedelta(days=d)).date()) for d in (2, 1, 0)}
    originals = {p.name: p.read_bytes() for p in bus.files()}
    assert len(originals) > 3  # rotated parts exist
    result = apply_action(debt_ctx, TENANT, "rotate_logs")
    assert result["done"] is True
    live = [p.name for p in bus.files()]
    assert all(name.startswith(now.date().isoformat()) for name in live)  # today's stay
    archive = bus.root.parent / "archive" / "bus"
    for name, data in originals.items():
        if name.startswith(now.date().isoformat()):
            continue
        gz = archive / f"{name}.gz"
        assert gz.stat().st_mode & 0o777 == 0o600
        assert gzip.decompress(gz.read_bytes()) == data
        assert not (bus.root / name).exists()
    # readers see every line, in the same order, and the same byte counts per day
    after = [line.raw for line in bus.read()]
    assert after[: len(before)] == before
    # (today's file only grew by the action's own debt.audit line)
    assert {d: bus.bytes_on((now - timedelta(days=d)).date()) for d in (2, 1)} == {
        d: sizes[d] for d in (2, 1)
    }
    # a second rotation has nothing left to archive; the audit's growth metric is unchanged
    assert apply_action(debt_ctx, TENANT, "rotate_logs")["archived"] == []
    report, _ = measure(debt_ctx, TENANT, seed=1)
    assert report.metric("audit_log_growth_rate").value == pytest.approx(sizes[1] / 1e6)


# --- boost_recency and tighten_scope -------------------------------------------------------------
def _recall(ctx: EngineContext, vector: list[float], **kw: Any) -> list[str]:
    q = RecallQuery(tenant_id=TENANT, query="where does the nightly backup run", **kw)
    return [h.record.id for h in recall(ctx, q, vector=vector).hits]


def test_boost_recency_ranks_the_newer_of_two_equal_memories_first(
    debt_ctx: EngineContext,
) -> None:
    rng = random.Random(2)
    v = unit(rng)
    now = debt_ctx.clock()
    text = "the nightly backup runs on the storage host"
    a = make_record(TENANT, text, valid_from=now - timedelta(days=300), record_id="a" * 32)
    b = make_record(TENANT, text, valid_from=now - timedelta(days=1), record_id="b" * 32)
    put(debt_ctx, [(a, v), (b, v)])
    plain = _recall(debt_ctx, v)
    assert sorted(plain) == sorted([a.id, b.id])
    older_first = plain[0] == a.id
    if not older_first:
        # The fused ranking put the newer first already: make it the older one's turn, so
        # that the boost has something to change.
        a, b = b, a
        for rec, days in ((a, 300), (b, 1)):
            put(
                debt_ctx,
                [(rec.model_copy(update={"valid_from": now - timedelta(days=days)}), v)],
            )
        assert _recall(debt_ctx, v)[0] == a.id
    result = apply_action(debt_ctx, TENANT, "boost_recency")
    assert result["recall_tuning"]["recency_weight"] > 0
    assert _recall(debt_ctx, v) == [b.id, a.id]


def test_tighten_scope_restricts_unscoped_queries_to_the_inferred_project(
    debt_ctx: EngineContext,
) -> None:
    rng = random.Random(3)
    v = unit(rng)
    p1 = make_record(TENANT, "backup on p1 host", project_id="p1")
    p2 = make_record(TENANT, "backup on p2 host", project_id="p2")
    put(debt_ctx, [(p1, v), (p2, v)])
    assert sorted(_recall(debt_ctx, v, session_id="s1")) == sorted([p1.id, p2.id])
    # session s1 last worked on p2; the tenant's most recent project is p1 (session s9)
    _recall(debt_ctx, v, session_id="s1", project_id="p2")
    _recall(debt_ctx, v, session_id="s9", project_id="p1")
    apply_action(debt_ctx, TENANT, "tighten_scope")
    assert _recall(debt_ctx, v, session_id="new-session") == [p1.id]
    last = debt_ctx.redis.xrevrange(redis_keys.query_log(TENANT), count=1)[0][1]
    assert last["context_project_id"] == "p1" and last["project_id"] == ""
    assert _recall(debt_ctx, v, session_id="s1") == [p2.id]
    # an explicit project still wins
    assert _recall(debt_ctx, v, session_id="s1", project_id="p1") == [p1.id]


# --- audit_judge_prompt -----------------------------------------------------------------------
class _ChatJudge:
    """OpenAI-compatible chat endpoint on 127.0.0.1: REPLACE when "moved" is in the pair."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                user = body["messages"][-1]["content"]
                content = "REPLACE\nit moved" if "moved" in user else "KEEP\nboth hold"
                raw = json.dumps(
                    {
                        "id": "c1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": content},
                                "finish_reason": "stop",
                            }
                        ],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()


@pytest.fixture
def chat_judge() -> Iterator[_ChatJudge]:
    server = _ChatJudge()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


PAIRS = [
    ("The staging server is alpha.internal", "The staging server moved to beta.internal"),
    ("Backups run at 02:00", "Backups run at 03:00"),
    ("The CI runs on GitHub Actions", "The team lunch is on Friday"),
    ("The database port is 5432", "The database port is no longer 5432"),
]


def test_audit_judge_prompt_compares_the_configured_judge_with_the_rules(
    debt_ctx: EngineContext, chat_judge: _ChatJudge
) -> None:
    _configure(
        privacy=Privacy.LOCAL, judge=JudgeConfig(kind=JudgeKind.HTTP, endpoint=chat_judge.url)
    )
    old_t = T0 - timedelta(days=5)
    for i, (old, new) in enumerate(PAIRS):
        item = ReviewItem(
            id=f"r{i}", tenant_id=TENANT, layer=Layer.SEMANTIC, old_id=f"o{i}", new_id=f"n{i}",
            old_text=old, new_text=new, old_valid_from=old_t, new_valid_from=T0, reason="",
            judge="rules", created_at=T0, status=ReviewStatus.APPROVED, resolved_at=T0,
        )  # fmt: skip
        debt_ctx.redis.hset(redis_keys.review_queue(TENANT), item.id, item.model_dump_json())
    rules = [RulesJudge().judge(Fact(o, old_t), Fact(n, T0)).verdict.value for o, n in PAIRS]
    standin = ["REPLACE" if "moved" in o + n else "KEEP" for o, n in PAIRS]
    agree = sum(r == s for r, s in zip(rules, standin, strict=True))
    result = apply_action(debt_ctx, TENANT, "audit_judge_prompt")
    report = result["report"]
    assert report["judge"] == "http" and report["pairs"] == len(PAIRS)
    assert report["agreement_with_rules"] == pytest.approx(agree / len(PAIRS))
    assert report["agreement_with_recorded"] == pytest.approx(standin.count("REPLACE") / 4)
    assert len(report["disagreements"]) == len(PAIRS) - agree
    stored = json.loads(str(debt_ctx.redis.get(redis_keys.judge_audit(TENANT))))
    assert stored == report
    lines = [d["body"] for d in _bus(debt_ctx) if d["kind"] == "debt.audit"]
    assert lines[-1]["action"] == "audit_judge_prompt" and lines[-1]["result"] == result


# --- diagnose_spawn, through the audit and through a confirmation -------------------------------
@pytest.mark.parametrize("mode", [AutoMode.AUTONOMOUS, AutoMode.ESCALATE])
def test_diagnose_spawn_reports_on_the_bus(debt_ctx: EngineContext, mode: AutoMode) -> None:
    _configure(
        auto_actions=AutoActions(scale=mode),
        agent_cli=AgentCli.SHELL,
        kernel=KernelConfig(command=STANDIN),
    )
    for s in range(1, 101):
        kernel_store.record_pod_ttfl(debt_ctx.redis, TENANT, float(s))  # p95 = 95 s: alert
    kernel_store.set_state(
        debt_ctx.redis, TENANT, KernelState.ERROR, StateSource.MANAGER, debt_ctx.clock(),
        event="exit", reason="exited with status 1: boom",
    )  # fmt: skip
    outcome = run_audit(debt_ctx, TENANT, seed=1)
    entry = next(a for a in outcome.actions if a["action"] == "diagnose_spawn")
    if mode is AutoMode.ESCALATE:
        assert "result" not in entry
        assert debt_ctx.redis.get(redis_keys.spawn_diagnosis(TENANT)) is None
        result = apply_confirmation(debt_ctx, TENANT, entry["confirmation_id"])
        item = json.loads(
            str(debt_ctx.redis.hget(redis_keys.confirmations(TENANT), entry["confirmation_id"]))
        )
        assert item["status"] == "approved"
        with pytest.raises(ValidationFailed, match="no pending debt confirmation"):
            apply_confirmation(debt_ctx, TENANT, entry["confirmation_id"])
    else:
        result = entry["result"]
    report = result["report"]
    assert report["pod_ttfl_s"]["samples"] == 100 and report["pod_ttfl_s"]["p95"] == 95.0
    assert report["agent_cli"]["found"] is True
    assert report["agent_cli"]["command"] == sys.executable
    assert report["kernel"]["last_error"] == "exited with status 1: boom"
    assert report["tmux"]["server"] in ("running", "no server on the socket", "tmux not installed")
    assert json.loads(str(debt_ctx.redis.get(redis_keys.spawn_diagnosis(TENANT)))) == report
    bodies = [d["body"] for d in _bus(debt_ctx) if d["kind"] == "debt.audit"]
    if mode is AutoMode.ESCALATE:
        # The approver also gets a plain-language summary (issue 17); the bus has the result.
        assert isinstance(result.pop("summary"), str)
    assert any(b.get("action") == "diagnose_spawn" and b["result"] == result for b in bodies)


# --- trim_working_memory on a real kernel (stand-in agent, private tmux socket) -----------------
@pytest.mark.tmux
def test_trim_working_memory_compacts_a_live_idle_kernel(
    debt_ctx: EngineContext, tmux_server: libtmux.Server, tmp_path: Path
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    _configure(agent_cli=AgentCli.SHELL, kernel=KernelConfig(workdir=str(workdir), command=STANDIN))
    gone = apply_action(debt_ctx, TENANT, "trim_working_memory")
    assert gone["done"] is False and "not running" in gone["reason"]
    manager = KernelManager(
        debt_ctx.settings, child_env=debt_ctx.child_env, redis_client=debt_ctx.redis
    )
    manager.spawn(TENANT)
    try:

        def idle() -> bool | None:
            status = manager.poll(TENANT)
            return True if status is not None and status.state is KernelState.IDLE else None

        retry_until(idle, what="the kernel to be idle")
        result = apply_action(debt_ctx, TENANT, "trim_working_memory")
        assert result == {"done": True, "command": "/compact"}
        retry_until(
            lambda: "Conversation compacted" in manager.capture(TENANT, 200) or None,
            what="the stand-in to compact",
        )
        triggers = [f["trigger"] for _, f in debt_ctx.redis.xrange(redis_keys.compactions(TENANT))]
        assert triggers == ["nika-debt"]
    finally:
        manager.stop(TENANT)


def test_debt_apply_op_runs_an_action_and_refuses_unknown_ones(debt_ctx: EngineContext) -> None:
    from nika_tui.domain.protocol import Op
    from nika_tui.domain.protocol_requests import DebtApplyRequest
    from nika_tui.engine.server.rpc import build_rpc_table

    handler = build_rpc_table()[Op.DEBT_APPLY]
    out = handler(debt_ctx, DebtApplyRequest(TENANT, action="tighten_scope"))
    assert out.result["recall_tuning"] == {"tighten_scope": True}
    assert debt_ctx.redis.hget(redis_keys.recall_tuning(TENANT), "tighten_scope") == "1"
    with pytest.raises(ValidationFailed, match="unknown debt action"):
        handler(debt_ctx, DebtApplyRequest(TENANT, action="reboot"))
    with pytest.raises(ValidationFailed, match="no pending debt confirmation"):
        handler(debt_ctx, DebtApplyRequest(TENANT, confirmation_id="nope"))


def test_a_past_day_written_again_after_rotation_is_archived_beside_the_first(
    debt_ctx: EngineContext,
) -> None:
    bus = debt_ctx.bus(TENANT)
    now = debt_ctx.clock()
    yesterday = now - timedelta(days=1)
    bus.append("kernel.event", {"n": 1}, now=yesterday)
    bus.archive_before(now.date())
    bus.append("kernel.event", {"n": 2}, now=yesterday)  # a late line for that day
    bus.archive_before(now.date())
    names = sorted(p.name for p in bus.files(archived=True))
    day = yesterday.date().isoformat()
    assert names == [f"{day}.jsonl.1.gz", f"{day}.jsonl.gz"]
    assert [line.data["body"]["n"] for line in bus.read() if line.data] == [1, 2]
    assert bus.files() == []


# --- an approved action that changed nothing is not asked again (issue 17) ---------------------
def test_a_useless_dedup_is_not_queued_again_until_the_memories_change(
    debt_ctx: EngineContext,
) -> None:
    from tests.plugins.debt import at_cosine

    rng = random.Random(3)
    rows = []
    for i in range(20):  # 40 points, every one with a twin at cosine 0.98 in the other project
        v = unit(rng)
        rows.append((make_record(TENANT, f"fact {i}", project_id="web"), v))
        rows.append((make_record(TENANT, f"fact {i}", project_id="api"), at_cosine(v, 0.98, rng)))
    put(debt_ctx, rows)
    first = run_audit(debt_ctx, TENANT, seed=1)
    assert first.report.metric("duplicate_rate").status.value == "alert"
    entry = next(a for a in first.actions if a["action"] == "dedup")
    result = apply_confirmation(debt_ctx, TENANT, entry["confirmation_id"])
    assert result["rem"]["changed"] == 0  # REM never merges across projects
    assert "different projects" in result["summary"] and "{" not in result["summary"]

    second = run_audit(debt_ctx, TENANT, seed=1)
    again = next(a for a in second.actions if a["action"] == "dedup")
    assert "confirmation_id" not in again and "changed nothing" in again["skipped"]
    assert confirmation_queue.pending_confirmation(debt_ctx.redis, TENANT, "debt.dedup") is None

    put(debt_ctx, [(make_record(TENANT, "a new fact", project_id="web"), unit(rng))])
    third = run_audit(debt_ctx, TENANT, seed=1)
    assert "confirmation_id" in next(a for a in third.actions if a["action"] == "dedup")
