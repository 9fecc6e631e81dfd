"""The NIKA_META envelope carried by every point, bus message and chunk.

Groups and closed enumerations are exactly those of the seed (« L'enveloppe NIKA_META »):
identity (who), hierarchy (where), temporal (when), classification (what / why), graph (links).
A value outside an enumeration is a validation error naming the field and the allowed values
(see :func:`explain_validation_error`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator


class ActionType(StrEnum):
    CODE = "code"
    RESEARCH = "research"
    DEBUG = "debug"
    DEPLOY = "deploy"
    CONFIG = "config"
    REVIEW = "review"
    DOC = "doc"
    SYSTEM = "system"
    COMMS = "comms"


class Domain(StrEnum):
    HOOKS = "hooks"
    INFRA = "infra"
    RAG = "rag"
    HIERARCHY = "hierarchy"
    MCP = "mcp"
    UI = "ui"
    FINANCE = "finance"
    BROWSER = "browser"
    AGENT = "agent"
    MEMORY = "memory"


class Intent(StrEnum):
    FEATURE = "feature"
    FIX = "fix"
    REFACTOR = "refactor"
    OPTIMIZE = "optimize"
    EXPLORE = "explore"
    MAINTAIN = "maintain"
    MIGRATE = "migrate"
    TEST = "test"


class Trigger(StrEnum):
    USER = "user"
    CRON = "cron"
    AUTONOMOUS = "autonomous"
    HOOK = "hook"
    POD = "pod"
    DAEMON = "daemon"
    SYSTEM = "system"


_ENUM_FIELDS: dict[str, type[StrEnum]] = {
    "action_type": ActionType,
    "domain": Domain,
    "intent": Intent,
    "trigger": Trigger,
}


class NikaMeta(BaseModel):
    """Who / where / when / what / why / links of one record. Frozen; unknown keys refused."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_enum_values=False)

    # Identity (WHO)
    session_id: str = Field(default="", max_length=200, description="Agent session id.")
    tmux: str = Field(default="", max_length=200, description="tmux session of the kernel.")
    agent_type: str = Field(default="", max_length=64, description="claude-code, codex, …")
    trigger: Trigger = Field(default=Trigger.USER, description="What caused the record.")
    # Hierarchy (WHERE)
    project_id: str = Field(default="", max_length=200)
    job_id: str = Field(default="", max_length=200)
    task_id: str = Field(default="", max_length=200)
    # Temporal (WHEN)
    timestamp: datetime = Field(description="When it happened (UTC).")
    duration_s: float = Field(default=0.0, ge=0)
    # Classification (WHAT / WHY)
    action_type: ActionType | None = None
    domain: Domain | None = None
    intent: Intent | None = None
    # Graph (LINKS)
    entity_ids: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    parent_id: str = ""
    produces: tuple[str, ...] = ()
    # Provenance of an imported record: "file:line" (``nika import``); empty when live.
    source: str = Field(default="", max_length=1000, description="Where it was imported from.")

    @field_validator("timestamp")
    @classmethod
    def _aware_utc(cls, value: datetime) -> datetime:
        # Naive datetimes are read as UTC so that comparisons never raise.
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)

    def to_payload(self) -> dict[str, object]:
        """JSON-ready dict (enums as their values, timestamp ISO-8601)."""
        return self.model_dump(mode="json")


def explain_validation_error(exc: ValidationError) -> str:
    """One line per bad field: the field, what was given, and the allowed values if closed."""
    lines: list[str] = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "(root)"
        leaf = str(err["loc"][-1]) if err["loc"] else ""
        given = err.get("input")
        if leaf in _ENUM_FIELDS:
            allowed = ", ".join(m.value for m in _ENUM_FIELDS[leaf])
            lines.append(f"{field}: {given!r} is not allowed; allowed values: {allowed}")
        elif err["type"] == "extra_forbidden":
            lines.append(f"{field}: unknown field")
        else:
            lines.append(f"{field}: {err['msg']}")
    return "; ".join(lines)
