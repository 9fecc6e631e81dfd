"""Model usage records from the agents' own transcripts, pure (lines in, records out).

- **Claude Code**: every ``assistant`` line carries ``message.usage`` (``input_tokens``,
  ``output_tokens``, ``cache_creation_input_tokens``, ``cache_read_input_tokens``) and
  ``message.model``; one API message written as several lines (one per content block) repeats
  the same ``message.id``, so a message counts once (its last line: the final output count).
- **Codex**: ``event_msg`` / ``token_count`` events carry ``info.total_token_usage``; a record is
  the *increase* of that total since the previous event (repeated events add nothing),
  ``cached_input_tokens`` counted as cache reads; the model comes from the last ``turn_context``.
- **Gemini CLI**: the session file's ``gemini`` messages carry ``tokens`` (see
  :func:`gemini_usages`).
- **OpenCode**: no file we read; nika's plugin sends each finished answer's ``tokens`` with the
  ``Stop`` event (see :func:`opencode_usages`).
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


def _gemini_messages(rec: Mapping[str, Any]) -> list[Any]:
    """The messages a Gemini CLI session line carries (a message, or a history rewrite)."""
    update = rec.get("$set")
    if isinstance(update, dict):
        messages = update.get("messages")
        return messages if isinstance(messages, list) else []
    return [rec] if "type" in rec and "id" in rec else []


def gemini_usages(records: Iterable[Mapping[str, Any]]) -> list[Usage]:
    """One :class:`Usage` per Gemini CLI ``gemini`` message that carries ``tokens``.

    Gemini CLI writes a message, then the same message again (same ``id``) once its usage is
    known; a history rewrite (``$set.messages``) repeats old ones. ``tokens.input`` is the
    API's ``promptTokenCount``, which includes ``cached``; ``thoughts`` are billed as output
    and ``tool`` (tool-use prompt tokens) as input, so the four counts sum to ``total``.
    """
    found: dict[str, Usage] = {}
    for rec in records:
        for msg in _gemini_messages(rec):
            tokens = msg.get("tokens") if isinstance(msg, dict) else None
            if msg.get("type") != "gemini" or not isinstance(tokens, dict) or not msg.get("id"):
                continue
            cached = _int(tokens.get("cached"))
            item = Usage(
                key=f"gemini-{msg['id']}",
                at=str(msg.get("timestamp") or ""),
                model=str(msg.get("model") or "unknown"),
                input_tokens=max(0, _int(tokens.get("input")) - cached) + _int(tokens.get("tool")),
                output_tokens=_int(tokens.get("output")) + _int(tokens.get("thoughts")),
                cache_read_tokens=cached,
            )
            if item.total:
                found[item.key] = item
    return list(found.values())


def opencode_usages(answers: Iterable[Any], at: str) -> list[Usage]:
    """One :class:`Usage` per finished OpenCode assistant message nika's plugin reported.

    Each answer is ``{"id", "model", "tokens": {"input", "output", "reasoning", "cache":
    {"read", "write"}}}`` (OpenCode's ``AssistantMessage``): ``input`` already excludes the
    cache reads, ``reasoning`` is billed as output.
    """
    out: list[Usage] = []
    for answer in answers:
        if not isinstance(answer, dict) or not answer.get("id"):
            continue
        tokens = answer.get("tokens")
        if not isinstance(tokens, dict):
            continue
        raw_cache = tokens.get("cache")
        cache: dict[str, Any] = raw_cache if isinstance(raw_cache, dict) else {}
        item = Usage(
            key=f"opencode-{answer['id']}",
            at=at,
            model=str(answer.get("model") or "unknown"),
            input_tokens=_int(tokens.get("input")),
            output_tokens=_int(tokens.get("output")) + _int(tokens.get("reasoning")),
            cache_read_tokens=_int(cache.get("read")),
            cache_write_tokens=_int(cache.get("write")),
        )
        if item.total:
            out.append(item)
    return out
