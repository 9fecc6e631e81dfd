"""The reply model of every :class:`~nika_tui.domain.protocol.Op`: what the service sends back.

A field is a key of the reply's ``result`` (see :mod:`nika_tui.domain.protocol_codec`). Nested
values keep the JSON of the type that owns them (a memory is a ``MemoryRecord`` dump, a review
item a ``ReviewItem`` dump): those models parse them, this module does not repeat their fields.
Replies that are an engine report (a purge plan, a compress run) are :class:`Report`\\ s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from pydantic import ValidationError

from nika_tui.domain.envelope import explain_validation_error
from nika_tui.domain.protocol import Op
from nika_tui.domain.protocol_codec import Message, Report
from nika_tui.domain.requests import RecallResult
from nika_tui.errors import ValidationFailed

Json = dict[str, Any]


@dataclass(frozen=True)
class PingReply(Message):
    """The service is up: its pid, its embedder, the ops it answers."""

    OP = Op.PING
    pid: int
    embedder: str
    ops: list[str]


@dataclass(frozen=True)
class RecallReply(Message):
    """Hits or the PALACE line (the body is the :class:`RecallResult` itself)."""

    OP = Op.RECALL
    result: RecallResult

    def to_body(self) -> Json:
        """The result's JSON."""
        return self.result.model_dump(mode="json")

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """The result of a received body.

        Raises:
            ValidationFailed: it is not a recall result.
        """
        try:
            return cls(RecallResult.model_validate(body))
        except ValidationError as exc:
            raise ValidationFailed(
                f"bad recall reply: {explain_validation_error(exc)}",
                "upgrade the caller or the service (`nika down && nika up`)",
            ) from exc


@dataclass(frozen=True)
class HistoryReply(Message):
    """The supersede chain through a memory, oldest first (``MemoryRecord`` dumps)."""

    OP = Op.HISTORY
    records: list[Json]
    snapshots: list[str] = field(default_factory=list)
    """Snapshots holding older versions a fresh start took out of the store (paths)."""


@dataclass(frozen=True)
class TimelineReply(Message):
    """The versions of each fact the query names, or the PALACE line."""

    OP = Op.TIMELINE
    query: str
    tenant_id: str
    timelines: list[Any]
    """One list of versions (``Version.to_json()``) per fact."""
    palace: str | None = None
    snapshots: list[list[str]] = field(default_factory=list)
    """Per timeline, the snapshots holding its older versions (after a fresh start)."""


@dataclass(frozen=True)
class StatsReply(Message):
    """``{tenant: {layer: {status: count}}}``."""

    OP = Op.STATS
    tenants: Json


@dataclass(frozen=True)
class ProjectsReply(Message):
    """``{project: {layer: {current, retired}}}`` of a tenant."""

    OP = Op.PROJECTS
    projects: Json


@dataclass(frozen=True)
class RecentReply(Message):
    """The newest current facts (``MemoryRecord`` dumps), newest first."""

    OP = Op.RECENT
    records: list[Json]


@dataclass(frozen=True)
class ReviewListReply(Message):
    """Review items (``ReviewItem`` dumps)."""

    OP = Op.REVIEW_LIST
    items: list[Json]


@dataclass(frozen=True)
class ReviewResolveReply(Message):
    """The resolved item (a ``ReviewItem`` dump)."""

    OP = Op.REVIEW_RESOLVE
    item: Json


@dataclass(frozen=True)
class MemoryListReply(Message):
    """A page of the memory browser: records (+ ``valid_until``, ``review_id``) and the total."""

    OP = Op.MEMORY_LIST
    records: list[Json]
    total: int


@dataclass(frozen=True)
class MemoryRetireReply(Message):
    """``status``: retired | already-retired."""

    OP = Op.MEMORY_RETIRE
    status: str
    id: str


@dataclass(frozen=True)
class MemoryRestoreReply(Message):
    """``status``: restored | already-current; what had replaced it, if anything."""

    OP = Op.MEMORY_RESTORE
    status: str
    id: str
    was_superseded_by: str | None = None


@dataclass(frozen=True)
class MemorySendReviewReply(Message):
    """The memory is in review as ``review_id``."""

    OP = Op.MEMORY_SEND_REVIEW
    status: str
    review_id: str
    id: str


@dataclass(frozen=True)
class AgentRetireReply(Message):
    """``status``: retired | review (then ``review_id``) | already-retired."""

    OP = Op.AGENT_RETIRE
    status: str
    id: str
    superseded_by: str | None = None
    review_id: str | None = None


@dataclass(frozen=True)
class AgentReviewResolveReply(Message):
    """The resolved item (a ``ReviewItem`` dump)."""

    OP = Op.AGENT_REVIEW_RESOLVE
    item: Json


@dataclass(frozen=True)
class AuditReply(Message):
    """``{tenant: audit result}``."""

    OP = Op.AUDIT
    tenants: Json


@dataclass(frozen=True)
class AuditHistoryReply(Message):
    """``{tenant: [past audit, …]}``."""

    OP = Op.AUDIT_HISTORY
    tenants: Json


@dataclass(frozen=True)
class DebtApplyReply(Message):
    """What the action did (``done`` and its details)."""

    OP = Op.DEBT_APPLY
    result: Json


@dataclass(frozen=True)
class PurgePlanReply(Report):
    """``PurgePlan.to_dict()``."""

    OP = Op.PURGE_PLAN


@dataclass(frozen=True)
class PurgeApplyReply(Report):
    """``PurgeResult.to_dict()``."""

    OP = Op.PURGE_APPLY


@dataclass(frozen=True)
class PurgeRestoreReply(Message):
    """The ids put back in the live index."""

    OP = Op.PURGE_RESTORE
    restored: list[str]
    count: int


@dataclass(frozen=True)
class RemRunReply(Message):
    """``{tenant: REM run summary}``."""

    OP = Op.REM_RUN
    tenants: Json


@dataclass(frozen=True)
class CompressReply(Report):
    """``CompressResult.to_dict()``."""

    OP = Op.COMPRESS


@dataclass(frozen=True)
class CompressResetReply(Report):
    """The reset's report (snapshot, counts, knowledge trees)."""

    OP = Op.COMPRESS_RESET


@dataclass(frozen=True)
class SnapshotExportReply(Report):
    """The export's manifest summary."""

    OP = Op.SNAPSHOT_EXPORT


@dataclass(frozen=True)
class SnapshotImportReply(Report):
    """What was loaded (points, reviews, hierarchy, path)."""

    OP = Op.SNAPSHOT_IMPORT


@dataclass(frozen=True)
class AutomemorySyncReply(Message):
    """One report per native memory target (Claude, Codex, Gemini, OpenCode)."""

    OP = Op.AUTOMEMORY_SYNC
    tenant_id: str
    targets: list[Json]


@dataclass(frozen=True)
class TuneRecallReply(Report):
    """The tuning run's report (trials, best parameters, what happens next)."""

    OP = Op.TUNE_RECALL


@dataclass(frozen=True)
class TuneAdoptReply(Message):
    """The parameters now in force."""

    OP = Op.TUNE_ADOPT
    adopted: Json
