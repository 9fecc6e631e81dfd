"""The memory record: text + NIKA_META + bitemporal status.

A memory is never deleted by the engine: superseding retires it (``status=retired``,
``retired_at``, ``superseded_by``, ``retire_reason``). Only the purge doctrine removes a point
from the live index, after archiving it and after its replacement is indexed.
"""

from __future__ import annotations

import hashlib
import unicodedata
import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from nika_tui.domain.envelope import NikaMeta

MAX_TEXT_CHARS = 8000
"""Longest text one memory may hold; longer input is refused (split it, or summarise)."""


class Layer(StrEnum):
    SEMANTIC = "semantic"
    EPISODIC = "episodic"


class Status(StrEnum):
    CURRENT = "current"
    RETIRED = "retired"


def normalise_text(text: str) -> str:
    """NFC, collapsed whitespace: the form hashed for idempotency."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def content_hash(tenant_id: str, layer: Layer, text: str, project_id: str = "") -> str:
    """Stable idempotency key: the same fact ingested twice maps to one point."""
    raw = "\x1f".join((tenant_id, layer.value, project_id, normalise_text(text).casefold()))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


MEMORY_ID_NAMESPACE = uuid.UUID("6f1c3a52-8d0e-5b7a-9c41-2e8f5d7a0b13")


def memory_id(tenant_id: str, idempotency_key: str) -> str:
    """Deterministic point id (UUIDv5 of tenant + key): a replayed ingest overwrites, never adds."""
    return str(uuid.uuid5(MEMORY_ID_NAMESPACE, f"{tenant_id}\x1f{idempotency_key}"))


class MemoryRecord(BaseModel):
    """One memory as stored (payload of a vector point, minus the vectors)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="UUID of the point.")
    tenant_id: str
    layer: Layer = Layer.SEMANTIC
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    meta: NikaMeta
    status: Status = Status.CURRENT
    valid_from: datetime = Field(description="When the fact became true (valid time).")
    asserted_at: datetime = Field(description="When we learnt it (transaction time).")
    retired_at: datetime | None = None
    superseded_by: str | None = None
    retire_reason: str | None = None
    content_hash: str

    @field_validator("valid_from", "asserted_at", "retired_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("text is empty")
        return value

    def to_payload(self) -> dict[str, Any]:
        """Flat payload for the vector store: filterable keys at the top level."""
        meta = self.meta.to_payload()
        return {
            "id": self.id,
            "tenant_id": self.tenant_id,
            "layer": self.layer.value,
            "text": self.text,
            "status": self.status.value,
            "valid_from": self.valid_from.isoformat(),
            "valid_from_ts": self.valid_from.timestamp(),
            "asserted_at": self.asserted_at.isoformat(),
            "retired_at": self.retired_at.isoformat() if self.retired_at else None,
            "superseded_by": self.superseded_by,
            "retire_reason": self.retire_reason,
            "content_hash": self.content_hash,
            # Filter keys, duplicated at the top level so payload indexes can cover them.
            "project_id": meta["project_id"],
            "job_id": meta["job_id"],
            "task_id": meta["task_id"],
            "domain": meta["domain"],
            "action_type": meta["action_type"],
            "meta": meta,
        }

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> MemoryRecord:
        """Inverse of :meth:`to_payload`."""
        return cls(
            id=str(payload["id"]),
            tenant_id=str(payload["tenant_id"]),
            layer=Layer(payload["layer"]),
            text=str(payload["text"]),
            meta=NikaMeta.model_validate(payload["meta"]),
            status=Status(payload["status"]),
            valid_from=datetime.fromisoformat(payload["valid_from"]),
            asserted_at=datetime.fromisoformat(payload["asserted_at"]),
            retired_at=(
                datetime.fromisoformat(payload["retired_at"]) if payload.get("retired_at") else None
            ),
            superseded_by=payload.get("superseded_by"),
            retire_reason=payload.get("retire_reason"),
            content_hash=str(payload["content_hash"]),
        )
