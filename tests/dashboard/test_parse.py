"""Pure pieces of the dashboard: payload parsers, the fill bar, the heartbeat steps, the CLI."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple

import pytest

from nika_tui.dashboard.model import FillView, as_datetime, format_duration
from nika_tui.dashboard.parse import (
    parse_bus_line,
    parse_counts,
    parse_debt,
    parse_fill,
    parse_kernel,
    worst_metric,
)
from nika_tui.ui.screens.overview import beat_text
from nika_tui.ui.widgets.fill_bar import fill_bar_text, forecast_text

NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)


class BarCase(NamedTuple):
    test_id: str
    percent: float | None
    expected: str


@pytest.mark.parametrize(
    "case",
    [
        BarCase("empty", 0.0, "░░░░░░░░░░░░│░░░░░░░   0%"),
        BarCase("half", 50.0, "██████████░░│░░░░░░░  50%"),
        BarCase("past-the-line", 80.0, "████████████│███░░░░  80%"),
        BarCase("unknown", None, "────────────────────    —"),
    ],
    ids=lambda c: c.test_id,
)
def test_fill_bar_marks_61_percent(case: BarCase) -> None:
    assert fill_bar_text(FillView(percent=case.percent)).plain == case.expected


def test_forecast_text() -> None:
    assert forecast_text(FillView(percent=40, forecast_s=720)).plain == "61% in 12m"
    assert forecast_text(FillView(percent=70, forecast_s=None)).plain == "past 61%"
    assert forecast_text(FillView(percent=40)).plain == "—"


@pytest.mark.parametrize(
    ("age", "stale", "state", "shown"),
    [
        (2.0, False, "working", "<5s"),
        (45, False, "idle", "<1m"),
        (600, True, "working", "10m"),
        (None, True, "working", "stale"),
        (None, True, "exited", "—"),
    ],
)
def test_heartbeat_in_coarse_steps(age: float | None, stale: bool, state: str, shown: str) -> None:
    assert beat_text(age, stale, state).plain == shown


def test_kernel_parse_heartbeat_age_and_unknown_state() -> None:
    k = parse_kernel(
        {"state": "working", "state_source": "hook"}, str(NOW.timestamp() - 4), True, NOW
    )
    assert (k.state, k.source, k.stale) == ("working", "hook", False)
    assert k.heartbeat_age_s == pytest.approx(4)
    assert parse_kernel({"state": "dancing"}, None, False, NOW).state == "unreadable"
    assert parse_kernel({}, None, False, NOW).state == "unknown"


def test_kernel_parse_each_agents_state_first_window_first() -> None:
    agent = '{{"state": "{}", "source": "pane", "at": "", "reason": ""}}'
    k = parse_kernel(
        {
            "state": "working",
            "cli": "claude-code",
            "agent.codex": agent.format("working"),
            "agent.claude-code": agent.format("idle"),
            "agent.gemini-cli": "{not json",
        },
        None,
        False,
        NOW,
    )
    assert k.agents == (("claude-code", "idle"), ("codex", "working"), ("gemini-cli", "unreadable"))
    assert parse_kernel({"state": "idle"}, None, False, NOW).agents == ()


def test_fill_at_or_past_61_forecasts_zero() -> None:
    assert parse_fill({"fill_percent": "61", "forecast_s": "100"}).forecast_s == 0.0
    assert parse_fill({"fill_percent": "x"}).unreadable


def test_debt_history_and_worst_metric() -> None:
    reports = [
        {
            "at": "2026-12-01T00:00:00+00:00",
            "metrics": [{"name": "dup", "value": 0.01, "status": "ok"}],
        },
        {
            "at": "2026-12-02T00:00:00+00:00",
            "metrics": [
                {
                    "name": "dup",
                    "value": 0.06,
                    "threshold": 0.05,
                    "status": "alert",
                    "action": "dedup",
                },
                {
                    "name": "leak",
                    "value": 0.1,
                    "threshold": 0.15,
                    "status": "warn",
                    "action": "diagnose_spawn",
                    "strategy": "compress_to_repo",
                },
            ],
        },
    ]
    debt = parse_debt("t", reports, {"rem": "autonomous", "scale": "off"})
    assert [m.history for m in debt.metrics] == [(0.01, 0.06), (0.1,)]
    assert [m.auto_mode for m in debt.metrics] == ["autonomous", "off"]
    assert worst_metric(debt) == ("alert", "dup 0.06")
    assert worst_metric(parse_debt("t", ["{nope"])) == ("unknown", "unreadable")


def test_bus_line_unreadable_keeps_raw() -> None:
    line = parse_bus_line("t", "{oops")
    assert line.unreadable and line.raw == "{oops"
    ok = parse_bus_line(
        "t", '{"kind":"hook.fired","NIKA_META":{"domain":"hooks"},"body":{"e":"Stop"}}'
    )
    assert (ok.kind, ok.domain, ok.summary) == ("hook.fired", "hooks", "e=Stop")


def test_counts_in_the_engine_reply_shape() -> None:
    reply = {
        "tenants": {
            "acme": {
                "semantic": {"current": 4, "retired": 1},
                "episodic": {"current": 0, "retired": 0},
            }
        }
    }
    assert parse_counts(reply)["semantic"] == {"current": 4, "retired": 1}


def test_small_formatters() -> None:
    assert [format_duration(s) for s in (None, 42, 420, 7500, 200000)] == [
        "—",
        "42s",
        "7m",
        "2h05",
        "2d",
    ]
    assert as_datetime("2026-12-02T10:00:00Z") == NOW
    assert as_datetime("garbage") is None


def test_cli_registers_dashboard_and_web() -> None:
    from nika_tui.cli import build_parser

    args = build_parser().parse_args(["web", "--port", "8123", "--offline-ui"])
    assert (args.port, args.host, args.offline_ui) == (8123, "127.0.0.1", True)
    assert build_parser().parse_args(["dashboard", "--offline-ui"]).offline_ui


def test_auto_mode_of_an_action_comes_from_the_debt_action_table() -> None:
    from nika_tui.dashboard.parse import auto_action_key
    from nika_tui.domain.debt_tables import ACTIONS, ActionKind

    for kind, spec in ACTIONS.items():
        assert auto_action_key(kind.value) == spec.governed_by
    assert auto_action_key(ActionKind.DEDUP.value) == "rem"
    assert auto_action_key("no-such-action") is None


def _dedup_audit(skipped: bool) -> dict[str, object]:
    action: dict[str, object] = {
        "action": "dedup", "metrics": ["duplicate_rate"], "decision": "confirm", "text": "merge",
    }  # fmt: skip
    if skipped:
        action["skipped"] = "approved before and changed nothing; not asked again"
    return {
        "at": "2026-12-03T10:00:00+00:00",
        "metrics": [
            {"name": "duplicate_rate", "value": 0.4, "threshold": 0.05, "status": "alert"},
            {"name": "staleness_score", "value": 10.0, "threshold": 90.0, "status": "ok"},
        ],
        "actions": [action],
    }


@pytest.mark.parametrize("skipped", [False, True], ids=["asked", "held-as-noop"])
def test_alert_whose_approved_action_changed_nothing_does_not_need_a_person(
    skipped: bool,
) -> None:
    from nika_tui.dashboard.model import TenantRow

    view = parse_debt("acme", [_dedup_audit(skipped)])
    status, label = worst_metric(view)
    assert (status, label) == ("alert", "duplicate_rate 0.4")  # the alert stays shown
    assert view.held == (("duplicate_rate",) if skipped else ())
    row = TenantRow("acme", debt_status=status, debt_held=not view.needs_person)
    assert row.needs_me is not skipped


def test_an_insufficient_metric_keeps_its_note_n_and_minimum() -> None:
    metric = {"name": "staleness_score", "value": 208.0, "threshold": 90.0}
    thin = metric | {"status": "insufficient", "sample_size": 40}
    thin["note"] = "insufficient data: n=3 of the 10 needed"  # n counts queries, not sample_size
    view = parse_debt("acme", [{"metrics": [thin, metric | {"status": "ok"}]}])
    first, second = view.metrics
    assert (first.status, first.note, first.sample_n, first.min_sample) == (
        "insufficient",
        "insufficient data: n=3 of the 10 needed",
        3,
        10,
    )
    assert (second.note, second.sample_n, second.min_sample) == ("", None, None)
