"""Bill what a transcript consumed since the last read, and count it toward the daily quota.

Called from the hooks (every event of Claude Code and Codex that names a transcript, and
Gemini CLI's session file; OpenCode's plugin hands its answers' usage over directly). Reads the
transcript from the byte offset of the last read to the last complete line, turns usage lines
into :class:`~nika_tui.billing.usage.Usage` records, drops keys already billed, appends the rest
to the billing log with the hook's NIKA_META and adds their tokens to the tenant's Redis
counter for the UTC day (``tokens_day``), all under the billing lock.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import redis

from nika_tui.billing.log import BillingLog, locked
from nika_tui.billing.usage import Usage, claude_usages, codex_usages, gemini_usages
from nika_tui.paths import Roots
from nika_tui.services import redis_keys

SEEN_KEEP = 500
DAY_TTL_S = 3 * 86400
MAX_READ_BYTES = 1024 * 1024
"""Read at most this much per hook run: a long session met for the first time is billed over
several events (~0.3 s each here) instead of one run that would overrun the hook's budget."""


def _read_new(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    size = path.stat().st_size
    if size < offset:
        offset = 0  # rewritten or truncated: read again (keys already billed are skipped)
    with open(path, "rb") as fh:
        fh.seek(offset)
        data = fh.read(MAX_READ_BYTES)
    end = data.rfind(b"\n")
    if end < 0:
        return [], offset
    records: list[dict[str, Any]] = []
    for raw in data[: end + 1].splitlines():
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if isinstance(rec, dict):
            records.append(rec)
    return records, offset + end + 1


def token_entry(
    tenant_id: str, usage: Usage, source: str, meta: Mapping[str, Any], now: datetime
) -> dict[str, Any]:
    """The billing-log line of one usage record."""
    return {
        "kind": "tokens",
        "at": usage.at or now.isoformat(),
        "tenant_id": tenant_id,
        "model": usage.model,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "key": usage.key,
        "source": source,
        "meta": dict(meta),
    }


def add_tokens(client: redis.Redis, tenant_id: str, day: str, tokens: int) -> int:
    """Add to the tenant's counter of ``day``; return the new total."""
    key = redis_keys.tokens_day(tenant_id, day)
    pipe = client.pipeline(transaction=True)
    pipe.incrby(key, tokens)
    pipe.expire(key, DAY_TTL_S)
    total, _ = pipe.execute()
    return int(total)


def _transcript_format(records: list[dict[str, Any]], cursor: Mapping[str, Any]) -> str:
    if cursor.get("format") in ("codex", "gemini"):
        return str(cursor["format"])
    if any(r.get("type") in ("event_msg", "turn_context", "session_meta") for r in records):
        return "codex"
    if any(r.get("type") == "gemini" or "$set" in r or "projectHash" in r for r in records):
        return "gemini"
    return "claude"


def collect_transcript(
    tenant_id: str,
    path: Path,
    meta: Mapping[str, Any],
    now: datetime,
    client: redis.Redis | None,
    where: Roots | None = None,
) -> list[dict[str, Any]]:
    """Bill the transcript's new usage lines; return the entries appended."""
    log = BillingLog(tenant_id, where)
    with locked(log.dir):
        cursors = log.read_cursors()
        cursor = cursors.get(str(path), {})
        records, offset = _read_new(path, int(cursor.get("offset", 0)))
        fmt = _transcript_format(records, cursor)
        if fmt == "codex":
            usages, last, model = codex_usages(
                records, cursor.get("codex"), cursor.get("model", "")
            )
            cursor.update(codex=last, model=model)
            source = "codex rollout"
        elif fmt == "gemini":
            usages = gemini_usages(records)
            source = "gemini-cli session"
        else:
            usages = claude_usages(records)
            source = "claude-code transcript"
        cursor.update(format=fmt, offset=offset)
        entries = _bill_locked(log, cursors, str(path), cursor, usages, source, meta, now)
    _count(client, tenant_id, now, entries, usages, where)
    return entries


def collect_usages(
    tenant_id: str,
    cursor_key: str,
    usages: list[Usage],
    source: str,
    meta: Mapping[str, Any],
    now: datetime,
    client: redis.Redis | None,
    where: Roots | None = None,
) -> list[dict[str, Any]]:
    """Bill usage records an agent handed over directly (OpenCode's plugin); a record whose key
    was billed under ``cursor_key`` before (the same answer reported twice) is skipped."""
    log = BillingLog(tenant_id, where)
    with locked(log.dir):
        cursors = log.read_cursors()
        cursor = cursors.get(cursor_key, {})
        entries = _bill_locked(log, cursors, cursor_key, cursor, usages, source, meta, now)
    _count(client, tenant_id, now, entries, usages, where)
    return entries


def _bill_locked(
    log: BillingLog,
    cursors: dict[str, Any],
    cursor_key: str,
    cursor: dict[str, Any],
    usages: list[Usage],
    source: str,
    meta: Mapping[str, Any],
    now: datetime,
) -> list[dict[str, Any]]:
    """Append the records not billed yet and remember their keys (under the billing lock)."""
    seen: list[str] = list(cursor.get("seen", []))
    fresh = [u for u in usages if u.key not in set(seen)]
    entries = [token_entry(log.tenant_id, u, source, meta, now) for u in fresh]
    log.append_locked(entries)
    cursor["seen"] = (seen + [u.key for u in fresh])[-SEEN_KEEP:]
    cursors[cursor_key] = cursor
    log.write_cursors(cursors)
    return entries


def _count(
    client: redis.Redis | None,
    tenant_id: str,
    now: datetime,
    entries: list[dict[str, Any]],
    usages: list[Usage],
    where: Roots | None,
) -> None:
    """Add the billed records to the day's token and cost counters (quota, dashboard)."""
    keys = {e["key"] for e in entries}
    fresh = [u for u in usages if u.key in keys]
    tokens = sum(u.total for u in fresh)
    if client is not None and tokens:
        day = now.strftime("%Y%m%d")
        add_tokens(client, tenant_id, day, tokens)
        add_cost(client, tenant_id, day, fresh, where)


def add_cost(
    client: redis.Redis,
    tenant_id: str,
    day: str,
    usages: list[Usage],
    where: Roots | None,
) -> None:
    """Add the priced part of ``usages`` to the day's cost counter (the dashboard's column).

    A malformed price table skips this (the usage is in the log; `nika billing report` says
    what is wrong with the table) rather than failing the hook.
    """
    from nika_tui.billing.prices import load_prices
    from nika_tui.errors import BillingError

    try:
        prices = load_prices(where)
    except BillingError:
        return
    cost = 0.0
    for u in usages:
        tokens = {
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cache_read_tokens": u.cache_read_tokens,
            "cache_write_tokens": u.cache_write_tokens,
        }
        cost += prices.cost(u.model, tokens) or 0.0
    if cost:
        key = redis_keys.cost_day(tenant_id, day)
        pipe = client.pipeline(transaction=True)
        pipe.incrbyfloat(key, cost)
        pipe.expire(key, DAY_TTL_S)
        pipe.execute()


def record_tool_call(
    tenant_id: str,
    tool: str,
    source: str,
    meta: Mapping[str, Any],
    now: datetime,
    where: Roots | None = None,
) -> dict[str, Any]:
    """Append one ``tool_call`` entry (PostToolUse and equivalents)."""
    entry = {
        "kind": "tool_call",
        "at": now.isoformat(),
        "tenant_id": tenant_id,
        "tool": tool[:120],
        "source": source,
        "meta": dict(meta),
    }
    BillingLog(tenant_id, where).append([entry])
    return entry
