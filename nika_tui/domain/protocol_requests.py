"""The request model of every :class:`~nika_tui.domain.protocol.Op`: what a client sends.

A field is a key of the request's ``body`` (see :mod:`nika_tui.domain.protocol_codec`); a
field without a default is required (a string one must be non-empty). An optional field is
``None`` when the caller leaves it to the service, which then applies the default named in its
docstring, so a client sends exactly the keys it sets, as clients always did.

:data:`REQUESTS` maps each op to its model: the service's RPC table reads bodies with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Self

from pydantic import ValidationError

from nika_tui.domain import protocol_replies as rep
from nika_tui.domain.envelope import explain_validation_error
from nika_tui.domain.protocol import Op
from nika_tui.domain.protocol_codec import Request, invalid
from nika_tui.domain.requests import MAX_RECALL_LIMIT, RecallQuery
from nika_tui.errors import ValidationFailed

TIMELINE_DEFAULT_CHAINS = 3
"""Timelines returned when the query sets no limit (the best-matching facts)."""


def _query(op: Op, body: Mapping[str, Any]) -> RecallQuery:
    try:
        return RecallQuery.model_validate(body)
    except ValidationError as exc:
        raise ValidationFailed(
            f"invalid {op}: {explain_validation_error(exc)}", "fix the query"
        ) from exc


@dataclass(frozen=True)
class PingRequest(Request[rep.PingReply]):
    """Is the service up, and what does it answer?"""

    OP = Op.PING
    REPLY = rep.PingReply


@dataclass(frozen=True)
class RecallRequest(Request[rep.RecallReply]):
    """A recall (the body is the :class:`RecallQuery` itself)."""

    OP = Op.RECALL
    REPLY = rep.RecallReply
    query: RecallQuery

    def to_body(self) -> dict[str, Any]:
        """The query's JSON."""
        return self.query.model_dump(mode="json")

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """The query of a received body (raises ValidationFailed if it is not a valid one)."""
        return cls(_query(Op.RECALL, body))


@dataclass(frozen=True)
class TimelineRequest(Request[rep.TimelineReply]):
    """The versions of the facts a query names (the body is a :class:`RecallQuery`)."""

    OP = Op.TIMELINE
    REPLY = rep.TimelineReply
    query: RecallQuery

    def to_body(self) -> dict[str, Any]:
        """The query's JSON."""
        return self.query.model_dump(mode="json")

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """The query of a received body (raises ValidationFailed if it is not a valid one);
        ``limit`` defaults to :data:`TIMELINE_DEFAULT_CHAINS`, clamped to the recall's range."""
        limit = body.get("limit", TIMELINE_DEFAULT_CHAINS)
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise invalid(f"{Op.TIMELINE} request", "limit", "an integer")
        return cls(_query(Op.TIMELINE, {**body, "limit": max(1, min(limit, MAX_RECALL_LIMIT))}))


@dataclass(frozen=True)
class HistoryRequest(Request[rep.HistoryReply]):
    """The supersede chain through one memory."""

    OP = Op.HISTORY
    REPLY = rep.HistoryReply
    tenant_id: str
    memory_id: str


@dataclass(frozen=True)
class StatsRequest(Request[rep.StatsReply]):
    """Counts per layer and status; ``tenant_id`` None: every configured tenant."""

    OP = Op.STATS
    REPLY = rep.StatsReply
    tenant_id: str | None = None


@dataclass(frozen=True)
class ProjectsRequest(Request[rep.ProjectsReply]):
    """Counts per project of a tenant."""

    OP = Op.PROJECTS
    REPLY = rep.ProjectsReply
    tenant_id: str


@dataclass(frozen=True)
class RecentRequest(Request[rep.RecentReply]):
    """The newest current facts; ``project_id`` None or empty: every project; ``limit`` None: 10."""

    OP = Op.RECENT
    REPLY = rep.RecentReply
    tenant_id: str
    project_id: str | None = None
    limit: int | None = None


@dataclass(frozen=True)
class ReviewListRequest(Request[rep.ReviewListReply]):
    """The tenant's pending review items (``include_resolved``: all of them)."""

    OP = Op.REVIEW_LIST
    REPLY = rep.ReviewListReply
    tenant_id: str
    include_resolved: bool | None = None


@dataclass(frozen=True)
class ReviewResolveRequest(Request[rep.ReviewResolveReply]):
    """A person's decision on review item ``id`` (approve | reject)."""

    OP = Op.REVIEW_RESOLVE
    REPLY = rep.ReviewResolveReply
    tenant_id: str
    id: str
    decision: str
    note: str | None = None


@dataclass(frozen=True)
class MemoryListRequest(Request[rep.MemoryListReply]):
    """The memory browser's filters; None: no filter (``limit`` None: the service's cap)."""

    OP = Op.MEMORY_LIST
    REPLY = rep.MemoryListReply
    tenant_id: str
    layer: str | None = None
    project_id: str | None = None
    status: str | None = None  # current | retired | review
    text: str | None = None  # a substring of the text, or an exact id
    as_of: str | None = None  # ISO time: what was current then, by valid time
    limit: int | None = None
    offset: int | None = None  # matches skipped (newest first): the browser's next page


@dataclass(frozen=True)
class MemoryRetireRequest(Request[rep.MemoryRetireReply]):
    """A person retires a memory now."""

    OP = Op.MEMORY_RETIRE
    REPLY = rep.MemoryRetireReply
    tenant_id: str
    memory_id: str
    reason: str | None = None


@dataclass(frozen=True)
class MemoryRestoreRequest(Request[rep.MemoryRestoreReply]):
    """A person makes a retired memory current again."""

    OP = Op.MEMORY_RESTORE
    REPLY = rep.MemoryRestoreReply
    tenant_id: str
    memory_id: str
    reason: str | None = None


@dataclass(frozen=True)
class MemorySendReviewRequest(Request[rep.MemorySendReviewReply]):
    """A person queues "retire this?" for a later decision."""

    OP = Op.MEMORY_SEND_REVIEW
    REPLY = rep.MemorySendReviewReply
    tenant_id: str
    memory_id: str
    reason: str | None = None


@dataclass(frozen=True)
class AgentRetireRequest(Request[rep.AgentRetireReply]):
    """An agent retires a memory (or queues it for review); ``agent`` None or empty: "agent"."""

    OP = Op.AGENT_RETIRE
    REPLY = rep.AgentRetireReply
    tenant_id: str
    memory_id: str
    reason: str
    superseded_by: str | None = None
    agent: str | None = None


@dataclass(frozen=True)
class AgentReviewResolveRequest(Request[rep.AgentReviewResolveReply]):
    """An agent's decision on review item ``id``, when the tenant allows it."""

    OP = Op.AGENT_REVIEW_RESOLVE
    REPLY = rep.AgentReviewResolveReply
    tenant_id: str
    id: str
    decision: str
    note: str | None = None
    agent: str | None = None


@dataclass(frozen=True)
class AuditRequest(Request[rep.AuditReply]):
    """Measure the memory debt (``act`` None: act on it too; ``sample_size`` None: 1000)."""

    OP = Op.AUDIT
    REPLY = rep.AuditReply
    tenant_id: str | None = None
    sample_size: int | None = None
    act: bool | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.sample_size is not None and self.sample_size < 1:
            raise ValidationFailed("sample_size must be a positive integer", "e.g. 1000")


@dataclass(frozen=True)
class AuditHistoryRequest(Request[rep.AuditHistoryReply]):
    """Past audits (``count`` None: the last 100)."""

    OP = Op.AUDIT_HISTORY
    REPLY = rep.AuditHistoryReply
    tenant_id: str | None = None
    count: int | None = None


@dataclass(frozen=True)
class DebtApplyRequest(Request[rep.DebtApplyReply]):
    """Run a debt action: an approved confirmation's, else the named ``action``."""

    OP = Op.DEBT_APPLY
    REPLY = rep.DebtApplyReply
    tenant_id: str
    confirmation_id: str | None = None
    action: str | None = None


@dataclass(frozen=True)
class PurgePlanRequest(Request[rep.PurgePlanReply]):
    """What a purge would remove (``retention_days`` None: the tenant's setting)."""

    OP = Op.PURGE_PLAN
    REPLY = rep.PurgePlanReply
    tenant_id: str
    retention_days: float | None = None


@dataclass(frozen=True)
class PurgeApplyRequest(Request[rep.PurgeApplyReply]):
    """Apply the purge plan (``ids`` None: all of it; ``confirmed`` None: not confirmed)."""

    OP = Op.PURGE_APPLY
    REPLY = rep.PurgeApplyReply
    tenant_id: str
    confirmed: bool | None = None
    retention_days: float | None = None
    ids: list[str] | None = None


@dataclass(frozen=True)
class PurgeRestoreRequest(Request[rep.PurgeRestoreReply]):
    """Put archived memories back (``ids`` None: every archived one)."""

    OP = Op.PURGE_RESTORE
    REPLY = rep.PurgeRestoreReply
    tenant_id: str
    ids: list[str] | None = None


@dataclass(frozen=True)
class RemRunRequest(Request[rep.RemRunReply]):
    """A REM pass (``steps`` None: every step; ``all``: every memory, not the last day's)."""

    OP = Op.REM_RUN
    REPLY = rep.RemRunReply
    tenant_id: str | None = None
    steps: list[str] | None = None
    all: bool | None = None


@dataclass(frozen=True)
class CompressRequest(Request[rep.CompressReply]):
    """Strategy A: write the knowledge trees (``repo`` None: the tenant's kernel workdir)."""

    OP = Op.COMPRESS
    REPLY = rep.CompressReply
    tenant_id: str
    repo: str | None = None


@dataclass(frozen=True)
class CompressResetRequest(Request[rep.CompressResetReply]):
    """Strategy A's reset: snapshot, compress, empty the store."""

    OP = Op.COMPRESS_RESET
    REPLY = rep.CompressResetReply
    tenant_id: str
    repo: str | None = None


def _absolute(path: str) -> None:
    if not PurePath(path).is_absolute():
        raise ValidationFailed(f"snapshot path {path!r} is not absolute", "pass an absolute path")


@dataclass(frozen=True)
class SnapshotExportRequest(Request[rep.SnapshotExportReply]):
    """Export the tenant's memories to the absolute ``path``."""

    OP = Op.SNAPSHOT_EXPORT
    REPLY = rep.SnapshotExportReply
    tenant_id: str
    path: str

    def __post_init__(self) -> None:
        _absolute(self.path)


@dataclass(frozen=True)
class SnapshotImportRequest(Request[rep.SnapshotImportReply]):
    """Import a snapshot (``force``: into a tenant that holds memories)."""

    OP = Op.SNAPSHOT_IMPORT
    REPLY = rep.SnapshotImportReply
    tenant_id: str
    path: str
    force: bool | None = None

    def __post_init__(self) -> None:
        _absolute(self.path)


@dataclass(frozen=True)
class AutomemorySyncRequest(Request[rep.AutomemorySyncReply]):
    """Sync the agents' native memories (``workdir`` None: the kernel's)."""

    OP = Op.AUTOMEMORY_SYNC
    REPLY = rep.AutomemorySyncReply
    tenant_id: str
    project_id: str | None = None
    workdir: str | None = None


@dataclass(frozen=True)
class TuneRecallRequest(Request[rep.TuneRecallReply]):
    """Tune the recall parameters (``trials`` None: the tuner's default)."""

    OP = Op.TUNE_RECALL
    REPLY = rep.TuneRecallReply
    tenant_id: str
    trials: int | None = None
    seed: int | None = None


@dataclass(frozen=True)
class TuneAdoptRequest(Request[rep.TuneAdoptReply]):
    """Adopt the parameters of an approved ``tune.adopt`` confirmation (its JSON ``detail``)."""

    OP = Op.TUNE_ADOPT
    REPLY = rep.TuneAdoptReply
    tenant_id: str
    detail: str | None = None


REQUESTS: Mapping[Op, type[Request[Any]]] = {
    cls.OP: cls
    for cls in (
        PingRequest, RecallRequest, TimelineRequest, HistoryRequest, StatsRequest,
        ProjectsRequest, RecentRequest, ReviewListRequest, ReviewResolveRequest,
        MemoryListRequest, MemoryRetireRequest, MemoryRestoreRequest, MemorySendReviewRequest,
        AgentRetireRequest, AgentReviewResolveRequest, AuditRequest, AuditHistoryRequest,
        DebtApplyRequest, PurgePlanRequest, PurgeApplyRequest, PurgeRestoreRequest,
        RemRunRequest, CompressRequest, CompressResetRequest, SnapshotExportRequest,
        SnapshotImportRequest, AutomemorySyncRequest, TuneRecallRequest, TuneAdoptRequest,
    )
}  # fmt: skip
"""The request model of each op (the reply's is the model's ``REPLY``)."""
