"""Working memory per kernel in Redis: current fill, fill history, compaction events.

Keys (:mod:`nika_tui.services.redis_keys`): ``working_memory`` (hash, the latest reading),
``fill_history`` (stream of samples, trimmed), ``compactions`` (stream of events, trimmed).
Writers: the agent hooks (every event with a transcript) and the kernel manager's pane poll.
Reader: the dashboard, through :func:`read_working_memory` / :func:`read_many`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import redis

from nika_tui.domain.context_fill import (
    FillSample,
    compaction_intervals,
    context_compaction_age,
    forecast_seconds_to_threshold,
)
from nika_tui.domain.iso_time import parse_iso_utc
from nika_tui.services import redis_keys
from nika_tui.services.transcripts.common import ContextFill

HISTORY_MAXLEN = 500
COMPACTIONS_MAXLEN = 200
READ_HISTORY = 120


@dataclass(frozen=True, slots=True)
class CompactionEvent:
    """One compaction of a kernel's context."""

    at: datetime
    trigger: str
    fill_percent: float


@dataclass(frozen=True, slots=True)
class WorkingMemory:
    """The dashboard's read model of one kernel's working memory."""

    tenant_id: str
    fill_percent: float
    tokens: int
    window: int
    format: str
    transcript: str
    updated_at: datetime | None
    forecast_s_to_61: float | None
    history: list[FillSample] = field(default_factory=list)
    compactions: list[CompactionEvent] = field(default_factory=list)

    @property
    def compaction_intervals_s(self) -> list[float]:
        """Seconds between consecutive compactions."""
        return compaction_intervals([c.at for c in self.compactions])

    @property
    def context_compaction_age_s(self) -> float | None:
        """Mean interval between compactions (the seed's ``context_compaction_age``)."""
        return context_compaction_age([c.at for c in self.compactions])

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "tenant_id": self.tenant_id,
            "fill_percent": self.fill_percent,
            "tokens": self.tokens,
            "window": self.window,
            "format": self.format,
            "transcript": self.transcript,
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
            "forecast_s_to_61": self.forecast_s_to_61,
            "context_compaction_age_s": self.context_compaction_age_s,
            "history": [
                {"at": s.at.isoformat(), "fill": s.fill_percent, "tokens": s.tokens}
                for s in self.history
            ],
            "compactions": [
                {"at": c.at.isoformat(), "trigger": c.trigger, "fill": c.fill_percent}
                for c in self.compactions
            ],
        }


StreamEntries = list[tuple[str, dict[str, str]]]


def read_stream(client: redis.Redis, key: str, count: int) -> StreamEntries:
    """The newest ``count`` entries of a stream (newest first), as plain strings."""
    raw = client.xrevrange(key, count=count) or []
    out: StreamEntries = []
    for entry_id, fields in raw:
        out.append((_s(entry_id), {_s(k): _s(v) for k, v in (fields or {}).items()}))
    return out


def _s(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except ValueError:
        return None


def _samples(entries: Sequence[tuple[str, dict[str, str]]]) -> list[FillSample]:
    out: list[FillSample] = []
    for _id, fields in entries:
        at = parse_iso_utc(fields.get("at"))
        fill = _float(fields.get("fill"))
        if at is None or fill is None:
            continue
        out.append(FillSample(at, fill, int(_float(fields.get("tokens")) or 0)))
    return sorted(out, key=lambda s: s.at)


def _compactions(entries: Sequence[tuple[str, dict[str, str]]]) -> list[CompactionEvent]:
    out: list[CompactionEvent] = []
    for _id, fields in entries:
        at = parse_iso_utc(fields.get("at"))
        if at is None:
            continue
        out.append(
            CompactionEvent(at, fields.get("trigger", ""), _float(fields.get("fill")) or 0.0)
        )
    return sorted(out, key=lambda c: c.at)


AGENT_FILL_PREFIX = "fill_percent:"
"""``fill_percent:{agent}``: one agent's own fill, beside the tenant's latest reading."""


def record_fill(
    client: redis.Redis,
    tenant_id: str,
    fill: ContextFill,
    transcript: str,
    now: datetime,
    agent: str | None = None,
) -> float | None:
    """Store one fill reading: the hash, a history sample, and the refreshed forecast.

    Args:
        client: a decoded Redis client.
        tenant_id: the tenant.
        fill: the reading.
        transcript: where it was read.
        now: the reading time.
        agent: the agent CLI whose context this is (its kernel window's name): a kernel with
            several agents has one context each, and the 61% policy compacts the full one.

    Returns:
        The forecast in seconds to 61% (None when unknown).
    """
    at = fill.at or now
    client.xadd(
        redis_keys.fill_history(tenant_id),
        {"at": at.isoformat(), "fill": str(fill.fill_percent), "tokens": str(fill.tokens)},
        maxlen=HISTORY_MAXLEN,
        approximate=True,
    )
    recent = read_stream(client, redis_keys.fill_history(tenant_id), READ_HISTORY)
    forecast = forecast_seconds_to_threshold(_samples(recent), now)
    client.hset(
        redis_keys.working_memory(tenant_id),
        mapping={
            "fill_percent": str(fill.fill_percent),
            "tokens": str(fill.tokens),
            "window": str(fill.window),
            "format": fill.format.value,
            "model": fill.model,
            "transcript": transcript,
            "updated_at": now.isoformat(),
            "forecast_s": "" if forecast is None else str(forecast),
            **({f"{AGENT_FILL_PREFIX}{agent}": str(fill.fill_percent)} if agent else {}),
        },
    )
    return forecast


def agent_fills(wm: Mapping[str, str]) -> dict[str, float]:
    """Each agent's own fill from a working-memory hash (empty before any agent reported)."""
    out: dict[str, float] = {}
    for key, value in wm.items():
        if key.startswith(AGENT_FILL_PREFIX):
            with contextlib.suppress(ValueError):
                out[key[len(AGENT_FILL_PREFIX) :]] = float(value)
    return out


def read_agent_fills(client: redis.Redis, tenant_id: str) -> dict[str, float]:
    """Each agent's own fill for one tenant (see :func:`agent_fills`)."""
    raw: dict[str, str] = client.hgetall(redis_keys.working_memory(tenant_id))  # type: ignore[assignment]
    return agent_fills(raw)


def record_compaction(
    client: redis.Redis, tenant_id: str, trigger: str, fill_pct: float, now: datetime
) -> None:
    """Append one compaction event (``trigger``: auto, manual, nika-autonomous, …)."""
    client.xadd(
        redis_keys.compactions(tenant_id),
        {"at": now.isoformat(), "trigger": trigger, "fill": str(fill_pct)},
        maxlen=COMPACTIONS_MAXLEN,
        approximate=True,
    )


def _build(
    tenant_id: str,
    wm: dict[str, str],
    history: Sequence[tuple[str, dict[str, str]]],
    compactions: Sequence[tuple[str, dict[str, str]]],
) -> WorkingMemory | None:
    if not wm and not history:
        return None
    return WorkingMemory(
        tenant_id=tenant_id,
        fill_percent=_float(wm.get("fill_percent")) or 0.0,
        tokens=int(_float(wm.get("tokens")) or 0),
        window=int(_float(wm.get("window")) or 0),
        format=wm.get("format", ""),
        transcript=wm.get("transcript", ""),
        updated_at=parse_iso_utc(wm.get("updated_at")),
        forecast_s_to_61=_float(wm.get("forecast_s")),
        history=_samples(history),
        compactions=_compactions(compactions),
    )


def read_working_memory(
    client: redis.Redis, tenant_id: str, history_limit: int = READ_HISTORY
) -> WorkingMemory | None:
    """One kernel's working memory, or None when nothing was ever recorded."""
    return read_many(client, [tenant_id], history_limit).get(tenant_id)


def read_many(
    client: redis.Redis, tenant_ids: Sequence[str], history_limit: int = READ_HISTORY
) -> dict[str, WorkingMemory]:
    """Working memory of many kernels in one round trip (dashboard refresh)."""
    pipe = client.pipeline(transaction=False)
    for t in tenant_ids:
        pipe.hgetall(redis_keys.working_memory(t))
        pipe.xrevrange(redis_keys.fill_history(t), count=history_limit)
        pipe.xrevrange(redis_keys.compactions(t), count=50)
    results = pipe.execute()
    out: dict[str, WorkingMemory] = {}
    for i, t in enumerate(tenant_ids):
        wm, hist, comp = results[3 * i : 3 * i + 3]
        built = _build(t, wm or {}, hist or [], comp or [])
        if built is not None:
            out[t] = built
    return out
