"""Model usage records from the agents' own transcripts, pure (lines in, records out).

- **Claude Code**: every ``assistant`` line carries ``message.usage`` (``input_tokens``,
  ``output_tokens``, ``cache_creation_input_tokens``, ``cache_read_input_tokens``) and
  ``message.model``; one API message written as several lines (one per content block) repeats
  the same ``message.id``, so a message counts once (its last line: the final output count).
- **Codex**: ``event_msg`` / ``token_count`` events carry ``info.total_token_usage``; a record is
  the *increase* of that total since the previous event (repeated events add nothing),
  ``cached_input_tokens`` counted as cache reads; the model comes from the last ``turn_context``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one model call consumed (``key`` dedupes it across reads)."""

    key: str
    at: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total(self) -> int:
        """Every token billed for the call."""
        return (
            self.input_tokens + self.output_tokens + self.cache_read_tokens
            + self.cache_write_tokens
        )  # fmt: skip


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and value > 0 else 0


def claude_usages(records: Iterable[Mapping[str, Any]]) -> list[Usage]:
    """One :class:`Usage` per assistant message id (the last line of each id wins)."""
    found: dict[str, Usage] = {}
    for rec in records:
        msg = rec.get("message")
        if rec.get("type") != "assistant" or not isinstance(msg, dict):
            continue
        usage = msg.get("usage")
        if not isinstance(usage, dict):
            continue
        key = str(msg.get("id") or rec.get("requestId") or rec.get("uuid") or "")
        if not key:
            continue
        item = Usage(
            key=key,
            at=str(rec.get("timestamp") or ""),
            model=str(msg.get("model") or "unknown"),
            input_tokens=_int(usage.get("input_tokens")),
            output_tokens=_int(usage.get("output_tokens")),
            cache_read_tokens=_int(usage.get("cache_read_input_tokens")),
            cache_write_tokens=_int(usage.get("cache_creation_input_tokens")),
        )
        if item.total:  # Claude Code's synthetic placeholder turns carry zero usage
            found[key] = item
    return list(found.values())


_CODEX_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens", "total_tokens")


def codex_usages(
    records: Iterable[Mapping[str, Any]], previous: Mapping[str, int] | None, model: str
) -> tuple[list[Usage], dict[str, int], str]:
    """Usage increases from Codex ``token_count`` events.

    Args:
        records: Rollout lines, in order.
        previous: The ``total_token_usage`` already counted for this rollout (``None``: none).
        model: The model known from earlier lines (``turn_context``).

    Returns:
        ``(records, the last total counted, model)``.
    """
    out: list[Usage] = []
    base = (
        {k: int(previous.get(k, 0)) for k in _CODEX_KEYS}
        if previous
        else dict.fromkeys(_CODEX_KEYS, 0)
    )
    for rec in records:
        payload = rec.get("payload")
        if not isinstance(payload, dict):
            continue
        if rec.get("type") == "turn_context" and payload.get("model"):
            model = str(payload["model"])
            continue
        if rec.get("type") != "event_msg" or payload.get("type") != "token_count":
            continue
        info = payload.get("info")
        total = info.get("total_token_usage") if isinstance(info, dict) else None
        if not isinstance(total, dict):
            continue  # info=null: a rate-limit update, no usage
        now = {k: _int(total.get(k)) for k in _CODEX_KEYS}
        if now["total_tokens"] <= base["total_tokens"]:
            continue  # the same total repeated: nothing new was consumed
        cached = max(0, now["cached_input_tokens"] - base["cached_input_tokens"])
        fresh_input = now["input_tokens"] - base["input_tokens"]
        out.append(
            Usage(
                key=f"codex-total-{now['total_tokens']}",
                at=str(rec.get("timestamp") or ""),
                model=model or "unknown",
                input_tokens=max(0, fresh_input - cached),
                output_tokens=max(0, now["output_tokens"] - base["output_tokens"]),
                cache_read_tokens=cached,
            )
        )
        base = now
    return out, base, model
