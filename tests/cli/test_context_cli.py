"""``nika context PATH --json`` on both transcript formats."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data"


def nika(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nika_tui", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("claude/transcript_session.jsonl", (9.43, 18866, 200_000, "claude-code")),
        ("codex/rollout.jsonl", (8.05, 21884, 272_000, "codex")),
    ],
)
def test_context_json(path: str, expected: tuple[float, int, int, str]) -> None:
    proc = nika("context", str(DATA / path), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["fill_percent"], out["tokens"], out["window"], out["format"]) == expected


def test_context_1m_model_flag() -> None:
    proc = nika(
        "context", str(DATA / "claude/transcript_session.jsonl"), "--model", "x[1m]", "--json"
    )
    assert json.loads(proc.stdout)["window"] == 1_000_000


def test_context_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    proc = nika("context", str(tmp_path / "nope.jsonl"), "--json")
    assert proc.returncode == 2
    err = json.loads(proc.stderr)
    assert "no transcript" in err["error"] and err["hint"]
