"""A pinned CLI that npm fails to install fails its tests, for every CLI: a skip would hide a
suite that no longer runs (only a missing npm skips)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # a pytest run per CLI

FIRST_TESTS = [
    ("tests/agents/test_claude_code.py", "@anthropic-ai/claude-code"),
    ("tests/agents/test_codex.py", "@openai/codex"),
    ("tests/agents/test_gemini_cli.py", "@google/gemini-cli"),
    ("tests/agents/test_opencode.py", "opencode-ai"),
]


@pytest.mark.parametrize(("path", "package"), FIRST_TESTS, ids=[p for _, p in FIRST_TESTS])
def test_a_failed_npm_install_fails_the_tests(tmp_path: Path, path: str, package: str) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    npm = bindir / "npm"
    npm.write_text("#!/bin/sh\necho 'npm ERR! 503 Service Unavailable' >&2\nexit 1\n")
    npm.chmod(0o755)
    env = os.environ | {
        "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
        "NIKA_AGENT_CLI_CACHE": str(tmp_path / "cache"),  # empty: nothing installed yet
    }
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-x", "-rs", path],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-2000:]
    assert f"npm install {package}@" in out and "503 Service Unavailable" in out
    assert "skipped" not in out.splitlines()[-1]
