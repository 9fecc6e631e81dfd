"""Billing: usage from real transcript shapes, incremental and deduplicated, priced, reported."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
import redis

from nika_tui.billing.collect import collect_transcript
from nika_tui.billing.log import BillingLog
from nika_tui.billing.prices import DEFAULT_PRICES, load_prices, parse_prices, prices_path
from nika_tui.billing.report import build_report
from nika_tui.domain.tenant import TenantConfig
from nika_tui.errors import BillingError
from nika_tui.services import redis_keys
from nika_tui.services.config_store import save_tenant

DATA = Path(__file__).resolve().parents[1] / "data"
NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
META = {"session_id": "s-1", "agent_type": "claude-code", "trigger": "hook"}


def _claude_expected(path: Path) -> dict[str, int]:
    """Sum of usage per distinct message id, read straight from the file."""
    by_id: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "assistant":
            by_id[rec["message"]["id"]] = rec["message"]["usage"]
    keys = ("input_tokens", "output_tokens", "cache_read_input_tokens",
            "cache_creation_input_tokens")  # fmt: skip
    return {"messages": len(by_id), "tokens": sum(u[k] for u in by_id.values() for k in keys)}


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    shutil.copy(DATA / "claude" / "transcript_session.jsonl", path)
    return path


def test_claude_transcript_billed_once_per_message(transcript: Path, redis_client) -> None:
    expected = _claude_expected(transcript)
    entries = collect_transcript("acme", transcript, META, NOW, redis_client)
    assert len(entries) == expected["messages"]
    billed = sum(e["input_tokens"] + e["output_tokens"] + e["cache_read_tokens"]
                 + e["cache_write_tokens"] for e in entries)  # fmt: skip
    assert billed == expected["tokens"]
    assert {e["meta"]["session_id"] for e in entries} == {"s-1"}
    assert int(redis_client.get(redis_keys.tokens_day("acme", "20261203"))) == billed
    # Read again: nothing new, nothing billed twice.
    assert collect_transcript("acme", transcript, META, NOW, redis_client) == []
    assert len(list(BillingLog("acme").entries())) == expected["messages"]


def test_appended_lines_are_billed_and_a_torn_line_waits(transcript: Path, redis_client) -> None:
    collect_transcript("acme", transcript, META, NOW, redis_client)
    line = {"type": "assistant", "timestamp": "2026-12-03T12:01:00Z",
            "message": {"id": "msg_new", "model": "claude-opus-4-1",
                        "usage": {"input_tokens": 10, "output_tokens": 20}}}  # fmt: skip
    raw = json.dumps(line)
    with open(transcript, "a") as fh:
        fh.write(raw[:30])  # the agent is still writing this line
    assert collect_transcript("acme", transcript, META, NOW, redis_client) == []
    with open(transcript, "a") as fh:
        fh.write(raw[30:] + "\n")
    [entry] = collect_transcript("acme", transcript, META, NOW, redis_client)
    assert (entry["model"], entry["input_tokens"], entry["output_tokens"]) == (
        "claude-opus-4-1", 10, 20,
    )  # fmt: skip


def test_codex_rollout_billed_by_total_increase(tmp_path: Path, redis_client) -> None:
    path = tmp_path / "rollout.jsonl"
    shutil.copy(DATA / "codex" / "rollout.jsonl", path)
    totals = [
        json.loads(line)["payload"]["info"]["total_token_usage"]["total_tokens"]
        for line in path.read_text().splitlines()
        if '"token_count"' in line and '"info": null' not in line and '"info":null' not in line
    ]
    entries = collect_transcript("acme", path, META, NOW, redis_client)
    assert {e["model"] for e in entries} == {"gpt-5-codex"}
    billed = sum(e["input_tokens"] + e["output_tokens"] + e["cache_read_tokens"] for e in entries)
    assert billed == max(totals)
    assert collect_transcript("acme", path, META, NOW, redis_client) == []


def test_billing_log_is_private(transcript: Path, redis_client) -> None:
    collect_transcript("acme", transcript, META, NOW, redis_client)
    log = BillingLog("acme")
    assert log.path.stat().st_mode & 0o777 == 0o600
    assert log.dir.stat().st_mode & 0o777 == 0o700


def test_report_by_model_and_day_with_the_price_table(transcript: Path, redis_client) -> None:
    entries = collect_transcript("acme", transcript, META, NOW, redis_client)
    report = build_report("acme", BillingLog("acme").entries(), DEFAULT_PRICES, None)
    assert set(report["by_model"]) == {e["model"] for e in entries}
    sonnet = DEFAULT_PRICES.models["claude-sonnet-4"]
    mine = [e for e in entries if e["model"].startswith("claude-sonnet-4")]
    expected = sum(
        e["input_tokens"] * sonnet.input + e["output_tokens"] * sonnet.output
        + e["cache_read_tokens"] * sonnet.cache_read + e["cache_write_tokens"] * sonnet.cache_write
        for e in mine
    ) / 1e6  # fmt: skip
    assert report["by_model"]["claude-sonnet-4-5-20250929"]["cost"] == pytest.approx(
        expected, abs=1e-6
    )
    assert sum(b["tokens"] for b in report["by_day"].values()) == report["total"]["tokens"]
    later = build_report("acme", BillingLog("acme").entries(), DEFAULT_PRICES, date(2099, 1, 1))
    assert later["total"]["tokens"] == 0


def test_unknown_model_is_unpriced_not_guessed() -> None:
    entry = {"kind": "tokens", "at": "2026-12-03T00:00:00Z", "model": "mystery-9",
             "input_tokens": 1000, "output_tokens": 0}  # fmt: skip
    report = build_report("acme", [entry], DEFAULT_PRICES, None)
    assert report["by_model"]["mystery-9"]["unpriced_tokens"] == 1000
    assert report["by_model"]["mystery-9"]["cost"] == 0


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("models:\n  gpt-5: {input: -1, output: 2}\n", "models.gpt-5.input"),
        ("models:\n  gpt-5: {input: 1}\n", "models.gpt-5.output"),
        ("models:\n  gpt-5: {input: 1, output: 2, surprise: 3}\n", "models.gpt-5.surprise"),
        ("currency: 12345\nmodels: {}\n", "currency"),
        ("nomodels: 1\n", "models"),
        ("models:\n  gpt-5: {input: .inf, output: 2}\n", "models.gpt-5.input"),
        ("models:\n  gpt-5: {input: 1, output: true}\n", "models.gpt-5.output"),
        ("models:\n  gpt-5: {input: '3', output: 2}\n", "models.gpt-5.input"),
        ("schema_version: 2\nmodels: {}\n", "schema_version"),
        ("models:\n  gpt-5:\n", "models.gpt-5"),
    ],
)
def test_malformed_price_table_is_refused_with_the_field(text: str, field: str) -> None:
    with pytest.raises(BillingError) as caught:
        parse_prices(text)
    assert f": {field}:" in caught.value.message


def test_edited_table_replaces_defaults(isolated_env) -> None:
    path = prices_path()
    path.parent.mkdir(parents=True)
    path.write_text("currency: EUR\nmodels:\n  gpt-5: {input: 2, output: 4}\n")
    table = load_prices()
    assert table.currency == "EUR" and table.price_for("gpt-5-codex").input == 2
    assert table.price_for("claude-sonnet-4-5") is None


def _nika(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nika_tui", *args], capture_output=True,
                          text=True, timeout=60)  # fmt: skip


def test_cli_report_json(transcript: Path, redis_client) -> None:
    save_tenant(TenantConfig(tenant_id="acme", display_name="Acme"))
    collect_transcript("acme", transcript, META, NOW, redis_client)
    out = _nika("billing", "report", "--tenant", "acme", "--since", "2020-01-01", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["total"]["tokens"] == _claude_expected(transcript)["tokens"]
    bad = _nika("billing", "report", "--tenant", "acme", "--since", "yesterday", "--json")
    assert bad.returncode == 2 and "YYYY-MM-DD" in bad.stderr


def test_cli_malformed_prices_one_line(isolated_env) -> None:
    save_tenant(TenantConfig(tenant_id="acme", display_name="Acme"))
    path = prices_path()
    path.parent.mkdir(parents=True)
    path.write_text("models:\n  gpt-5: {input: one, output: 2}\n")
    out = _nika("billing", "report", "--tenant", "acme")
    assert out.returncode == 2
    assert "models.gpt-5.input" in out.stderr.splitlines()[0]


def test_redis_counter_is_per_day(transcript: Path, redis_client: redis.Redis) -> None:
    collect_transcript("acme", transcript, META, NOW, redis_client)
    assert redis_client.get(redis_keys.tokens_day("acme", "20261204")) is None
    assert redis_client.ttl(redis_keys.tokens_day("acme", "20261203")) > 0


def test_a_long_transcript_is_billed_over_several_events_exactly_once(tmp_path: Path) -> None:
    from nika_tui.billing.collect import MAX_READ_BYTES

    path = tmp_path / "long.jsonl"
    pad = "x" * 2000
    with open(path, "w") as fh:
        n = 0
        while fh.tell() < 2.5 * MAX_READ_BYTES:
            rec = {"type": "assistant", "timestamp": "2026-12-03T10:00:00Z",
                   "message": {"id": f"m{n}", "model": "claude-sonnet-4-5", "content": pad,
                               "usage": {"input_tokens": 1, "output_tokens": 2}}}  # fmt: skip
            fh.write(json.dumps(rec) + "\n")
            n += 1
    first = collect_transcript("acme", path, META, NOW, None)
    assert 0 < len(first) < n  # one hook run never reads the whole long session
    total = len(first)
    while batch := collect_transcript("acme", path, META, NOW, None):
        total += len(batch)
    assert total == n
    keys = [e["key"] for e in BillingLog("acme").entries()]
    assert len(keys) == len(set(keys)) == n
