"""Requests and answers exchanged with the memory service (over Redis, as JSON).

Shared by the CLI, hooks, the MCP server and the dashboard (writers of requests) and the
engine (their single reader).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.memory import MAX_TEXT_CHARS, Layer, MemoryRecord

MAX_RECALL_LIMIT = 50


class _Msg(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RememberRequest(_Msg):
    """One memory to ingest. Enqueued on the ingest stream; durable once enqueued."""

    tenant_id: str
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    layer: Layer = Layer.SEMANTIC
    meta: NikaMeta
    valid_from: datetime | None = Field(
        default=None, description="When the fact became true; defaults to meta.timestamp."
    )
    idempotency_key: str = Field(
        default="", description="Set by the writer; replays with the same key store one point."
    )


class RecallQuery(_Msg):
    """A tenant-scoped recall."""

    tenant_id: str
    query: str = Field(min_length=1, max_length=2000)
    project_id: str | None = None
    job_id: str | None = None
    task_id: str | None = None
    domain: str | None = None
    action_type: str | None = None
    layer: Layer | None = Field(default=None, description="None = both layers.")
    limit: int = Field(default=5, ge=1, le=MAX_RECALL_LIMIT)
    include_retired: bool = False
    session_id: str = Field(default="", description="Caller session, for active_refs.")
    as_of: datetime | None = Field(
        default=None, description="Answer with what was current then, by valid time."
    )


class RecallHit(_Msg):
    """One recalled memory with its scores."""

    record: MemoryRecord
    score: float = Field(description="Fused rank score (hybrid).")
    cosine: float = Field(description="Dense cosine similarity to the query.")


class RecallResult(_Msg):
    """Hits, or the PALACE answer when nothing relevant came back."""

    query: str
    tenant_id: str
    hits: list[RecallHit]
    palace: str | None = Field(
        default=None, description="'no memory for {X}' (or French) when hits is empty."
    )
    hierarchy: dict[str, Any] = Field(
        default_factory=dict, description="Status of the job/task ids named (golden rule)."
    )
