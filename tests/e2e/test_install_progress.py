"""`make`'s install step says what it does, step by step (issue 17: it used to look hung).

The real recipe runs with ``PYTHON`` pointing at a stand-in interpreter that records each call
and creates the venv layout, so the test sees every step's line and the command after it without
downloading anything. The full install is exercised by CI's `make test` on a clean clone.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# The stand-in: logs its argv; `-m venv DIR` makes DIR/bin/python (itself) like a real venv.
STANDIN = f"""#!/bin/sh
echo "CALL $0 $*" >> "$NIKA_CALLS"
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
    mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && chmod +x "$3/bin/python"
fi
if [ "$1" = "-c" ]; then exec {sys.executable} "$@"; fi
exit 0
"""


def test_each_install_step_prints_its_line_before_its_command(tmp_path: Path) -> None:
    for name in ("Makefile", "pyproject.toml", "requirements.lock"):
        shutil.copy(REPO / name, tmp_path / name)
    python = tmp_path / "python-standin"
    python.write_text(STANDIN, encoding="utf-8")
    python.chmod(0o755)
    calls = tmp_path / "calls.log"

    done = subprocess.run(
        ["make", "--no-print-directory", ".venv/.installed", f"PYTHON={python}"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NIKA_CALLS": str(calls)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    steps = [line for line in lines if line.startswith("==> [")]
    assert [s[:10] for s in steps] == ["==> [1/4] ", "==> [2/4] ", "==> [3/4] ", "==> [4/4] "]
    assert "creating .venv" in steps[0]
    assert "torch 2.13.0" in steps[1] and "CPU" in steps[1]
    assert "requirements.lock" in steps[2]
    assert "nika-os itself" in steps[3]
    assert lines[-1] == "==> installed in .venv"

    def after(step: str) -> str:
        """The first command make echoed after ``step``'s line."""
        at = lines.index(step)
        return next(line for line in lines[at + 1 :] if not line.startswith(("==>", "#")))

    assert " -m venv .venv" in after(steps[0])
    assert "pip install" in after(steps[1]) and "torch==2.13.0" in after(steps[1])
    assert "-r requirements.lock" in after(steps[2])
    assert "--no-deps -e ." in after(steps[3])
    # What ran, in that order, through the stand-in and then the venv's python.
    ran = calls.read_text(encoding="utf-8").splitlines()
    assert any("torch==2.13.0" in c for c in ran)
    assert (tmp_path / ".venv" / ".installed").exists()
    # Installed: a second make has nothing to do and prints no step.
    again = subprocess.run(
        ["make", "--no-print-directory", ".venv/.installed", f"PYTHON={python}"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NIKA_CALLS": str(calls)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert again.returncode == 0 and "==> [" not in again.stdout
