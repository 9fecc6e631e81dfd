"""``nika billing report --since DATE`` through the real command line, on a log spanning days."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from nika_tui.billing.collect import collect_usages, record_tool_call
from nika_tui.billing.usage import opencode_usages
from nika_tui.domain.tenant import TenantConfig
from nika_tui.services.config_store import save_tenant

TENANT = "acme"
META = {"session_id": "s-1", "agent_type": "opencode", "trigger": "hook"}
DAY1 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
DAY2 = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
DAY3 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
# 01:00 on Dec 3 at UTC+2 is 23:00 on Dec 2 in UTC: the report's days are UTC days.
LATE_DAY2 = datetime(2026, 12, 3, 1, 0, tzinfo=timezone(timedelta(hours=2)))


def _answer(msg_id: str, tokens_in: int) -> dict[str, Any]:
    return {"id": msg_id, "model": "gpt-5", "tokens": {"input": tokens_in, "output": 10}}


def _bill(at: datetime, msg_id: str, tokens_in: int, tool: str) -> None:
    usages = opencode_usages([_answer(msg_id, tokens_in)], at.isoformat())
    collect_usages(TENANT, "opencode:s-1", usages, "opencode plugin", META, at, None)
    record_tool_call(TENANT, tool, "opencode PostToolUse", META, at)


def _report(*extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "nika_tui", "billing", "report", "--tenant", TENANT, *extra]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def three_days(isolated_env: dict[str, str]) -> None:
    save_tenant(TenantConfig(tenant_id=TENANT, display_name="Acme"))
    _bill(DAY1, "m1", 1_000, "read")
    _bill(DAY2, "m2", 2_000, "bash")
    _bill(LATE_DAY2, "m3", 4_000, "bash")
    _bill(DAY3, "m4", 8_000, "edit")


@pytest.mark.usefixtures("three_days")
def test_since_keeps_that_utc_day_and_the_later_ones() -> None:
    out = _report("--since", "2026-12-02", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["since"] == "2026-12-02"
    assert list(report["by_day"]) == ["2026-12-02", "2026-12-03"]
    assert report["by_day"]["2026-12-02"]["input_tokens"] == 2_000 + 4_000
    assert report["by_day"]["2026-12-02"]["tool_calls"] == 2
    assert report["by_day"]["2026-12-03"]["input_tokens"] == 8_000
    assert report["total"]["tokens"] == (2_000 + 4_000 + 8_000) + 3 * 10
    assert report["tool_calls_by_tool"] == {"bash": 2, "edit": 1}
    # gpt-5 at the default table's list price: 1.25 in, 10 out per million tokens.
    assert report["total"]["cost"] == pytest.approx((14_000 * 1.25 + 30 * 10.0) / 1e6)


@pytest.mark.usefixtures("three_days")
def test_without_since_every_day_and_after_the_last_day_nothing() -> None:
    everything = json.loads(_report("--json").stdout)
    assert list(everything["by_day"]) == ["2026-12-01", "2026-12-02", "2026-12-03"]
    assert everything["tool_calls"] == 4
    later = json.loads(_report("--since", "2026-12-04", "--json").stdout)
    assert later["by_day"] == {} and later["tool_calls"] == 0 and later["total"]["tokens"] == 0


@pytest.mark.parametrize("bad", ["yesterday", "2026-02-30", "12/02/2026", ""])
@pytest.mark.usefixtures("three_days")
def test_a_malformed_date_is_a_one_line_error(bad: str) -> None:
    out = _report("--since", bad, "--json")
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert repr(bad) in lines[0] and "YYYY-MM-DD" in lines[0]
