"""Context fill: percent, window per model, forecast to 61%, compaction intervals."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import pytest

from nika_tui.domain.context_fill import (
    CLAUDE_1M_WINDOW,
    CLAUDE_DEFAULT_WINDOW,
    FillSample,
    claude_window,
    compaction_intervals,
    context_compaction_age,
    fill_percent,
    fill_rate_per_s,
    forecast_seconds_to_threshold,
    since_last_compaction,
)

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


class WindowCase(NamedTuple):
    test_id: str
    model: str | None
    tokens: int
    expected: int


WINDOW_CASES = [
    WindowCase("default", "claude-sonnet-4-5-20250929", 1000, CLAUDE_DEFAULT_WINDOW),
    WindowCase("unknown model", None, 0, CLAUDE_DEFAULT_WINDOW),
    WindowCase("1m suffix", "claude-sonnet-4-5[1m]", 1000, CLAUDE_1M_WINDOW),
    WindowCase("1m suffix upper", "Sonnet[1M]", 0, CLAUDE_1M_WINDOW),
    WindowCase("over 200k means 1m", "claude-sonnet-4-5", 250_000, CLAUDE_1M_WINDOW),
    WindowCase("native 1m default model", "claude-opus-4-8", 1000, CLAUDE_1M_WINDOW),
    WindowCase("native 1m dated id", "claude-opus-4-7-20260301", 0, CLAUDE_1M_WINDOW),
    WindowCase("older opus stays 200k", "claude-opus-4-6", 1000, CLAUDE_DEFAULT_WINDOW),
]


def test_claude_window_1m_disabled() -> None:
    # CLAUDE_CODE_DISABLE_1M_CONTEXT: Claude Code itself falls back to 200k (unless the
    # context already holds more, which only a 1M window can).
    assert claude_window("claude-opus-4-8", 1000, disable_1m=True) == CLAUDE_DEFAULT_WINDOW
    assert claude_window("opus[1m]", 1000, disable_1m=True) == CLAUDE_DEFAULT_WINDOW
    assert claude_window("claude-opus-4-8", 300_000, disable_1m=True) == CLAUDE_1M_WINDOW


@pytest.mark.parametrize("case", WINDOW_CASES, ids=[c.test_id for c in WINDOW_CASES])
def test_claude_window(case: WindowCase) -> None:
    assert claude_window(case.model, case.tokens) == case.expected


def test_fill_percent_rounds_and_guards_zero_window() -> None:
    assert fill_percent(18866, 200_000) == 9.43
    assert fill_percent(122_000, 200_000) == 61.0
    assert fill_percent(10, 0) == 0.0


def test_forecast_uses_rate_since_last_compaction() -> None:
    # Fill rose 10 -> 40 in 300 s, then a compaction dropped it to 5, then 5 -> 11 in 60 s.
    samples = [
        FillSample(at(0), 10.0, 20_000),
        FillSample(at(300), 40.0, 80_000),
        FillSample(at(310), 5.0, 10_000),
        FillSample(at(370), 11.0, 22_000),
    ]
    assert [s.fill_percent for s in since_last_compaction(samples)] == [5.0, 11.0]
    assert fill_rate_per_s(samples, at(370)) == pytest.approx(0.1)
    # (61 - 11) / 0.1 per second = 500 s
    assert forecast_seconds_to_threshold(samples, at(370)) == pytest.approx(500.0)


def test_forecast_is_zero_past_threshold_and_none_when_flat() -> None:
    assert forecast_seconds_to_threshold([FillSample(at(0), 62.0, 1)], at(0)) == 0.0
    flat = [FillSample(at(0), 30.0, 1), FillSample(at(60), 30.0, 1)]
    assert forecast_seconds_to_threshold(flat, at(60)) is None
    assert forecast_seconds_to_threshold([FillSample(at(0), 30.0, 1)], at(0)) is None
    assert forecast_seconds_to_threshold([], at(0)) is None


def test_forecast_ignores_samples_older_than_the_window() -> None:
    samples = [
        FillSample(at(0), 0.0, 0),
        FillSample(at(2000), 20.0, 1),
        FillSample(at(2100), 30.0, 1),
    ]
    # Only the last two are within 900 s of now: 10 points in 100 s.
    assert fill_rate_per_s(samples, at(2100)) == pytest.approx(0.1)


def test_compaction_intervals_and_age() -> None:
    times = [at(1800), at(0), at(3000)]
    assert compaction_intervals(times) == [1800.0, 1200.0]
    assert context_compaction_age(times) == 1500.0
    assert context_compaction_age([at(0)]) is None
