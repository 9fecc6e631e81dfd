"""``nika billing report``: tokens and cost by model and by day, tool calls by tool."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime
from typing import Any

from nika_tui.billing.prices import PriceTable

_TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def _bucket() -> dict[str, Any]:
    return {**dict.fromkeys(_TOKEN_FIELDS, 0), "tokens": 0, "cost": 0.0, "unpriced_tokens": 0}


def _add(bucket: dict[str, Any], entry: dict[str, Any], cost: float | None) -> None:
    tokens = 0
    for name in _TOKEN_FIELDS:
        value = int(entry.get(name) or 0)
        bucket[name] += value
        tokens += value
    bucket["tokens"] += tokens
    if cost is None:
        bucket["unpriced_tokens"] += tokens
    else:
        bucket["cost"] += cost


def utc_day(at: object) -> str:
    """The UTC day (``YYYY-MM-DD``) of an entry's ``at``.

    The agents' own records carry offsets (a transcript written at 01:00+02:00 is the previous
    UTC day); ``--since`` and the day buckets are UTC days. A naive or unreadable time keeps
    its first ten characters.
    """
    text = str(at or "")
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text[:10]
    if when.tzinfo is None:
        return text[:10]
    return when.astimezone(UTC).date().isoformat()


def build_report(
    tenant_id: str, entries: Iterable[dict[str, Any]], prices: PriceTable, since: date | None
) -> dict[str, Any]:
    """Aggregate billing entries from ``since`` (UTC day, inclusive) on."""
    total = _bucket()
    by_model: dict[str, dict[str, Any]] = {}
    by_day: dict[str, dict[str, Any]] = {}
    tools: dict[str, int] = {}
    for entry in entries:
        day = utc_day(entry.get("at"))
        if since is not None and day < since.isoformat():
            continue
        if entry.get("kind") == "tool_call":
            tool = str(entry.get("tool", "?"))
            tools[tool] = tools.get(tool, 0) + 1
            by_day.setdefault(day, _bucket()).setdefault("tool_calls", 0)
            by_day[day]["tool_calls"] += 1
            continue
        if entry.get("kind") != "tokens":
            continue
        model = str(entry.get("model", "unknown"))
        cost = prices.cost(model, {k: int(entry.get(k) or 0) for k in _TOKEN_FIELDS})
        for bucket in (
            total,
            by_model.setdefault(model, _bucket()),
            by_day.setdefault(day, _bucket()),
        ):
            _add(bucket, entry, cost)
    for bucket in (total, *by_model.values(), *by_day.values()):
        bucket["cost"] = round(bucket["cost"], 6)
    return {
        "tenant_id": tenant_id,
        "since": since.isoformat() if since else None,
        "currency": prices.currency,
        "total": total,
        "tool_calls": sum(tools.values()),
        "tool_calls_by_tool": dict(sorted(tools.items())),
        "by_model": dict(sorted(by_model.items())),
        "by_day": dict(sorted(by_day.items())),
    }
