"""The RPC protocol's request and reply models: one per op, round trips, clear errors."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import pytest

from nika_tui.domain import protocol_replies as rep
from nika_tui.domain import protocol_requests as req
from nika_tui.domain.protocol import Op
from nika_tui.domain.protocol_codec import Message
from nika_tui.domain.requests import RecallQuery, RecallResult
from nika_tui.errors import ValidationFailed

QUERY = RecallQuery(tenant_id="acme", query="which database?", limit=3)
RECORD = {"id": "m1", "text": "we use Postgres"}
ITEM = {"id": "r1", "status": "approved"}

SAMPLES: dict[Op, tuple[Message, Message]] = {
    Op.PING: (req.PingRequest(), rep.PingReply(pid=7, embedder="e5", ops=["ping", "recall"])),
    Op.RECALL: (
        req.RecallRequest(QUERY),
        rep.RecallReply(RecallResult(query="q", tenant_id="acme", hits=[], palace="no memory")),
    ),
    Op.HISTORY: (req.HistoryRequest("acme", "m1"), rep.HistoryReply([RECORD])),
    Op.TIMELINE: (
        req.TimelineRequest(QUERY),
        rep.TimelineReply("q", "acme", [[{"id": "m1"}]], palace=None),
    ),
    Op.STATS: (req.StatsRequest("acme"), rep.StatsReply({"acme": {"semantic": {"current": 1}}})),
    Op.PROJECTS: (req.ProjectsRequest("acme"), rep.ProjectsReply({"web": {"semantic": {}}})),
    Op.RECENT: (req.RecentRequest("acme", "web", 5), rep.RecentReply([RECORD])),
    Op.REVIEW_LIST: (req.ReviewListRequest("acme", True), rep.ReviewListReply([ITEM])),
    Op.REVIEW_RESOLVE: (
        req.ReviewResolveRequest("acme", "r1", "approve", "ok"),
        rep.ReviewResolveReply(ITEM),
    ),
    Op.MEMORY_LIST: (
        req.MemoryListRequest(
            "acme", layer="semantic", status="review", as_of="2026-01-01", offset=500
        ),
        rep.MemoryListReply([RECORD], 1),
    ),
    Op.MEMORY_RETIRE: (
        req.MemoryRetireRequest("acme", "m1", "wrong"),
        rep.MemoryRetireReply("retired", "m1"),
    ),
    Op.MEMORY_RESTORE: (
        req.MemoryRestoreRequest("acme", "m1"),
        rep.MemoryRestoreReply("restored", "m1", "m2"),
    ),
    Op.MEMORY_SEND_REVIEW: (
        req.MemorySendReviewRequest("acme", "m1"),
        rep.MemorySendReviewReply("review", "p1", "m1"),
    ),
    Op.AGENT_RETIRE: (
        req.AgentRetireRequest("acme", "m1", "stale", superseded_by="m2", agent="claude"),
        rep.AgentRetireReply("review", "m1", review_id="r9"),
    ),
    Op.AGENT_REVIEW_RESOLVE: (
        req.AgentReviewResolveRequest("acme", "r1", "reject", agent="codex"),
        rep.AgentReviewResolveReply(ITEM),
    ),
    Op.AUDIT: (req.AuditRequest("acme", 100, False, 3), rep.AuditReply({"acme": {"ok": 1}})),
    Op.AUDIT_HISTORY: (req.AuditHistoryRequest(count=5), rep.AuditHistoryReply({"acme": []})),
    Op.DEBT_APPLY: (
        req.DebtApplyRequest("acme", action="rem"),
        rep.DebtApplyReply({"done": True}),
    ),
    Op.PURGE_PLAN: (req.PurgePlanRequest("acme", 7.5), rep.PurgePlanReply({"entries": []})),
    Op.PURGE_APPLY: (
        req.PurgeApplyRequest("acme", confirmed=True, ids=["m1"]),
        rep.PurgeApplyReply({"purged": ["m1"]}),
    ),
    Op.PURGE_RESTORE: (req.PurgeRestoreRequest("acme"), rep.PurgeRestoreReply(["m1"], 1)),
    Op.REM_RUN: (
        req.RemRunRequest("acme", ["merge"], all=True),
        rep.RemRunReply({"acme": {"ops": 0}}),
    ),
    Op.COMPRESS: (req.CompressRequest("acme", "/repo"), rep.CompressReply({"files": 2})),
    Op.COMPRESS_RESET: (req.CompressResetRequest("acme"), rep.CompressResetReply({"n": 0})),
    Op.SNAPSHOT_EXPORT: (
        req.SnapshotExportRequest("acme", "/tmp/snap"),
        rep.SnapshotExportReply({"points": 3}),
    ),
    Op.SNAPSHOT_IMPORT: (
        req.SnapshotImportRequest("acme", "/tmp/snap", force=True),
        rep.SnapshotImportReply({"points": 3, "path": "/tmp/snap"}),
    ),
    Op.AUTOMEMORY_SYNC: (
        req.AutomemorySyncRequest("acme", workdir="/w"),
        rep.AutomemorySyncReply("acme", [{"target": "claude"}]),
    ),
    Op.TUNE_RECALL: (req.TuneRecallRequest("acme", 10, 1), rep.TuneRecallReply({"best": {}})),
    Op.TUNE_ADOPT: (
        req.TuneAdoptRequest("acme", '{"params": {}}'),
        rep.TuneAdoptReply({"top_k": 5}),
    ),
}


def test_every_op_has_a_request_model_whose_reply_model_is_its_own() -> None:
    assert set(req.REQUESTS) == set(Op)
    for op, model in req.REQUESTS.items():
        assert model.OP is op
        assert model.REPLY.OP is op, f"{model.__name__} answers with another op's reply"


def test_the_samples_cover_every_op() -> None:
    assert set(SAMPLES) == set(Op)


@pytest.mark.parametrize("op", list(Op), ids=str)
def test_request_and_reply_round_trip_through_json(op: Op) -> None:
    request, reply = SAMPLES[op]
    assert type(request) is req.REQUESTS[op]
    assert type(reply) is req.REQUESTS[op].REPLY
    for message in (request, reply):
        wire = json.loads(json.dumps(message.to_body()))
        assert type(message).from_body(wire) == message


class Legacy(NamedTuple):
    test_id: str
    model: type[Message]
    body: dict[str, Any]


# Bodies as the clients built them by hand before the models: they still parse, and a model
# built from one sends the same JSON back (a null and a missing key both mean "not given").
LEGACY = [
    Legacy("history", req.HistoryRequest, {"tenant_id": "a", "memory_id": "m"}),
    Legacy("review list", req.ReviewListRequest, {"tenant_id": "a", "include_resolved": False}),
    Legacy("dashboard resolve", req.ReviewResolveRequest,
           {"tenant_id": "a", "id": "r", "decision": "approve"}),
    Legacy("recent", req.RecentRequest, {"tenant_id": "a", "project_id": "", "limit": 10}),
    Legacy("browser list", req.MemoryListRequest, {"tenant_id": "a", "text": "pg", "layer": "x"}),
    Legacy("agent retire", req.AgentRetireRequest, {"tenant_id": "a", "memory_id": "m",
           "reason": "r", "superseded_by": "", "agent": "agent"}),
    Legacy("audit", req.AuditRequest, {"sample_size": 1000, "act": True, "tenant_id": "a"}),
    Legacy("purge apply", req.PurgeApplyRequest, {"tenant_id": "a", "confirmed": True}),
    Legacy("rem", req.RemRunRequest, {"all": False}),
    Legacy("confirmation", req.DebtApplyRequest, {"tenant_id": "a", "confirmation_id": "c1"}),
    Legacy("ping with tenant", req.PingRequest, {}),
]  # fmt: skip


@pytest.mark.parametrize("case", LEGACY, ids=[c.test_id for c in LEGACY])
def test_a_body_built_by_an_old_client_parses_and_is_sent_unchanged(case: Legacy) -> None:
    assert case.model.from_body(case.body).to_body() == case.body


def test_a_null_is_read_as_not_given_and_unknown_keys_are_ignored() -> None:
    body = {"tenant_id": "a", "retention_days": None, "from_a_newer_client": 1}
    assert req.PurgePlanRequest.from_body(body) == req.PurgePlanRequest("a")


def test_recall_keeps_its_query_shape_and_timeline_its_default_and_clamped_limit() -> None:
    body = QUERY.model_dump(mode="json")
    assert req.RecallRequest.from_body(body).to_body() == body
    no_limit = {k: v for k, v in body.items() if k != "limit"}
    assert req.TimelineRequest.from_body(no_limit).query.limit == req.TIMELINE_DEFAULT_CHAINS
    assert req.TimelineRequest.from_body({**body, "limit": 999}).query.limit == 50


class Malformed(NamedTuple):
    test_id: str
    model: type[Message]
    body: Any
    names: tuple[str, ...]  # what the message must say


MALFORMED = [
    Malformed("missing key", req.HistoryRequest, {"tenant_id": "a"}, ("memory_id", "history")),
    Malformed("empty string", req.ProjectsRequest, {"tenant_id": ""}, ("tenant_id", "projects")),
    Malformed("wrong type", req.RecentRequest, {"tenant_id": "a", "limit": "ten"},
              ("limit", "integer")),
    Malformed("bool is no count", req.AuditRequest, {"sample_size": True}, ("sample_size",)),
    Malformed("list item", req.PurgeApplyRequest, {"tenant_id": "a", "ids": ["m", 3]},
              ("ids[]", "string")),
    Malformed("flag", req.SnapshotImportRequest, {"tenant_id": "a", "path": "/s", "force": "y"},
              ("force", "true or false")),
    Malformed("not an object", req.StatsRequest, ["acme"], ("JSON object",)),
    Malformed("relative path", req.SnapshotExportRequest, {"tenant_id": "a", "path": "snap"},
              ("not absolute",)),
    Malformed("bad sample", req.AuditRequest, {"sample_size": 0}, ("positive",)),
    Malformed("recall query", req.RecallRequest, {"tenant_id": "a"}, ("recall", "query")),
    Malformed("timeline limit", req.TimelineRequest, {"tenant_id": "a", "query": "q",
              "limit": "3"}, ("limit",)),
    Malformed("reply", rep.MemoryListReply, {"records": []}, ("total",)),
]  # fmt: skip


@pytest.mark.parametrize("case", MALFORMED, ids=[c.test_id for c in MALFORMED])
def test_a_malformed_body_gets_a_clear_error_with_a_one_line_hint(case: Malformed) -> None:
    with pytest.raises(ValidationFailed) as caught:
        case.model.from_body(case.body)
    for name in case.names:
        assert name in caught.value.message
    assert caught.value.hint and "\n" not in caught.value.hint
