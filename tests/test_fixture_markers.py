"""Tests whose fixtures load the real model or tmux are marked by the fixture (tests/conftest.py),
so ``make test-fast`` deselects them even when the test itself forgot its marker (issue 12)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAST = "not slow and not tmux and not embedder and not agents"


def _collected(path: str, marks: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
         "-m", marks, path],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return {line.split("::")[-1] for line in out.stdout.splitlines() if "::" in line}


def test_a_test_on_the_running_service_is_not_in_the_fast_lane() -> None:
    # This test has no @pytest.mark.embedder of its own: ``running_service`` loads the model.
    name = "test_a_queued_review_prints_its_reason_through_the_service"
    assert name in _collected("tests/cli/test_memory_cli.py", "embedder")
    fast = _collected("tests/cli/test_memory_cli.py", FAST)
    assert fast and name not in fast
