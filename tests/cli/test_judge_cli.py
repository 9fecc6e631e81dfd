"""``nika judge eval``: the quality gate on the fixed dev set, output formats, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nika_tui.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
DEV = DATA / "judge_dev.jsonl"
HOLDOUT = DATA / "judge_holdout.jsonl"


def _eval_json(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    assert main(["judge", "eval", str(path), "--json", *extra]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def test_dev_set_is_large_bilingual_and_has_every_label() -> None:
    rows = [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines() if line]
    labels = [r["label"] for r in rows]
    assert len(rows) >= 150
    assert {"REPLACE", "KEEP", "UNCERTAIN"} == set(labels)
    french = sum(1 for r in rows if r.get("kind", "").startswith("fr"))
    assert french >= len(rows) // 6
    kinds = {r.get("kind", "").removeprefix("fr ") for r in rows}
    assert {"backdated", "duplicate", "other-entity", "hedged", "same-time"} <= kinds


def test_rules_judge_meets_the_bar_on_the_dev_set(capsys: pytest.CaptureFixture[str]) -> None:
    # Quality gate on a fixed dataset (DESIGN.md / issue 3): not a timing assertion.
    report = _eval_json(DEV, capsys, "--judge", "rules")
    assert report["judge"] == "rules"
    assert report["n"] == 161
    assert report["wrong_replace_rate"] <= 0.02
    assert report["accuracy"] >= 0.85
    assert set(report["per_label"]) == {"REPLACE", "KEEP", "UNCERTAIN"}


def test_holdout_is_scored(capsys: pytest.CaptureFixture[str]) -> None:
    report = _eval_json(HOLDOUT, capsys)
    assert report["n"] == 30
    assert report["wrong_replace_rate"] <= 0.02


def test_human_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", "eval", str(HOLDOUT)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"judge offline on {HOLDOUT}")
    assert "wrong_replace_rate" in out and "confusion" in out
    assert "UNCERTAIN" in out


def test_bad_file_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "label": "KEEP"}\n', encoding="utf-8")
    assert main(["judge", "eval", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "line 1: old must be an object" in err
    assert err.count("\n") == 2  # error line + hint line


def test_missing_and_non_utf8_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", "eval", str(tmp_path / "nope.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes("déploiement".encode("latin-1"))
    assert main(["judge", "eval", str(latin), "--json"]) == 2
    err = json.loads(capsys.readouterr().err)
    assert "not UTF-8" in err["error"]


def test_http_judge_needs_an_endpoint(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", "eval", str(HOLDOUT), "--judge", "http"]) == 2
    assert "needs an endpoint" in capsys.readouterr().err


def test_api_key_env_must_be_set(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["judge", "eval", str(HOLDOUT), "--judge", "http", "--endpoint", "http://127.0.0.1:9"]
    assert main([*args, "--api-key-env", "NIKA_TEST_UNSET_KEY"]) == 2
    assert "NIKA_TEST_UNSET_KEY is not set" in capsys.readouterr().err
