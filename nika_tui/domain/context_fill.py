"""Working-memory fill: how full an agent's context window is, and when it will reach 61%.

Pure: samples and timestamps come in as arguments. Definitions (docs/agents.md):

- **fill %** = tokens in the context window / the model's window x 100.
- **context_compaction_age** = the mean interval between two consecutive compactions
  (seed: alert below 30 min, a sign of noise accumulating in the working memory).
- **forecast to 61%** = (61% - current fill) / the recent fill rate, where the rate is the
  slope between the first and last samples of the recent window *since the last compaction*
  (a drop in fill is a compaction: samples before it say nothing about the current context).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

COMPACTION_THRESHOLD_PERCENT = 61.0
"""The seed's compaction threshold (« compactée automatiquement à 61 % »)."""

CLAUDE_DEFAULT_WINDOW = 200_000
CLAUDE_1M_WINDOW = 1_000_000
CODEX_DEFAULT_WINDOW = 272_000
"""Used only when a rollout has no ``model_context_window`` (older Codex builds)."""

FORECAST_WINDOW_S = 900.0
"""How far back the forecast looks for its rate (15 minutes of samples)."""

COMPACTION_AGE_ALERT_S = 30 * 60.0
"""Seed threshold for ``context_compaction_age``."""


@dataclass(frozen=True, slots=True)
class FillSample:
    """One observation of a context's fill."""

    at: datetime
    fill_percent: float
    tokens: int


def fill_percent(tokens: int, window: int) -> float:
    """``tokens / window`` in percent, rounded to 0.01; 0 for an unknown window."""
    if window <= 0 or tokens <= 0:
        return 0.0
    return round(100.0 * tokens / window, 2)


CLAUDE_NATIVE_1M_MODELS: frozenset[str] = frozenset(
    {
        "claude-opus-4-7",
        "claude-opus-4-8",
        "claude-sonnet-5",
        "claude-fable-5",
        "claude-mythos-5",
        "claude-mythos-preview",
    }
)
"""Models Claude Code 2.1.197 runs with a 1M-token window without a ``[1m]`` suffix (its own
model table: ``context.window = 1e6, native_1m``; the request carries the 1M beta). The
transcript and the hook payloads name them without the suffix, so the name alone decides."""

_DATE_SUFFIX = re.compile(r"-\d{8}$")


def claude_window(model: str | None, tokens: int = 0, disable_1m: bool = False) -> int:
    """The context window of a Claude model, as Claude Code sizes it.

    ``[1m]`` models (e.g. ``claude-sonnet-4-5[1m]``) and the natively-1M models of
    :data:`CLAUDE_NATIVE_1M_MODELS` have 1M tokens; every other model 200k.
    ``CLAUDE_CODE_DISABLE_1M_CONTEXT`` (``disable_1m``) turns the 1M window off, as in Claude
    Code. A context that already holds more than 200k tokens can only be a 1M one.
    """
    name = (model or "").strip().lower()
    if tokens > CLAUDE_DEFAULT_WINDOW:
        return CLAUDE_1M_WINDOW
    if disable_1m:
        return CLAUDE_DEFAULT_WINDOW
    if name.endswith("[1m]"):
        return CLAUDE_1M_WINDOW
    if _DATE_SUFFIX.sub("", name) in CLAUDE_NATIVE_1M_MODELS:
        return CLAUDE_1M_WINDOW
    return CLAUDE_DEFAULT_WINDOW


def since_last_compaction(samples: Sequence[FillSample]) -> list[FillSample]:
    """The samples after the last drop in fill (oldest first)."""
    ordered = sorted(samples, key=lambda s: s.at)
    start = 0
    for i in range(1, len(ordered)):
        if ordered[i].fill_percent < ordered[i - 1].fill_percent:
            start = i
    return ordered[start:]


def fill_rate_per_s(
    samples: Sequence[FillSample], now: datetime, window_s: float = FORECAST_WINDOW_S
) -> float | None:
    """Percentage points per second over the recent samples of the current context.

    Returns None when fewer than two samples fall in the window or they span no time.
    """
    current = [
        s for s in since_last_compaction(samples) if (now - s.at).total_seconds() <= window_s
    ]
    if len(current) < 2:
        return None
    first, last = current[0], current[-1]
    span = (last.at - first.at).total_seconds()
    if span <= 0:
        return None
    return (last.fill_percent - first.fill_percent) / span


def forecast_seconds_to_threshold(
    samples: Sequence[FillSample],
    now: datetime,
    threshold: float = COMPACTION_THRESHOLD_PERCENT,
    window_s: float = FORECAST_WINDOW_S,
) -> float | None:
    """Seconds until the fill reaches ``threshold`` at the recent rate.

    Returns 0 when the latest sample is already at or above the threshold, None when the
    rate is unknown or not rising (no forecast rather than an infinite one).
    """
    if not samples:
        return None
    latest = max(samples, key=lambda s: s.at)
    if latest.fill_percent >= threshold:
        return 0.0
    rate = fill_rate_per_s(samples, now, window_s)
    if rate is None or rate <= 0:
        return None
    return round((threshold - latest.fill_percent) / rate, 1)


def compaction_intervals(times: Sequence[datetime]) -> list[float]:
    """Seconds between consecutive compactions (sorted first)."""
    ordered = sorted(times)
    return [(b - a).total_seconds() for a, b in itertools.pairwise(ordered)]


def context_compaction_age(times: Sequence[datetime]) -> float | None:
    """Mean interval between two compactions, in seconds; None with fewer than two."""
    gaps = compaction_intervals(times)
    if not gaps:
        return None
    return round(sum(gaps) / len(gaps), 1)
