"""Test collection time (issue 12: "collection under 3 s"): wall and CPU of
``pytest --collect-only -q`` on the whole suite with its bytecode cached (the edit loop: one
priming run first, not counted), beside the floor of any pytest run, ``pytest --version``'s
start-up, and ``python -c "import nika_tui"``. Runs interleaved, ``--runs`` each, in child
processes with the caller's environment (with ``PYTHONDONTWRITEBYTECODE`` set, the suite's
conftest keeps the cache under ``~/.cache/nika-os/pycache``, decision 393). Writes
``benchmarks/results/collect_time.json``.

    .venv/bin/python benchmarks/collect_time.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "collect_time.json"


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU (user + system of the child) seconds, and the last output line."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = out.stdout.strip().splitlines()
    return wall, cpu, lines[-1] if lines else out.stderr.strip()[-200:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    py = sys.executable
    collect = [py, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    cases = {
        "collect_warm": collect,
        "pytest_version": [py, "-m", "pytest", "--version"],
        "import_nika_tui": [py, "-c", "import nika_tui"],
    }
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    _timed(collect, env)  # priming: rewrites and caches every test module once
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    summary = ""
    for _ in range(args.runs):
        for name, cmd in cases.items():
            wall, cpu, last = _timed(cmd, env)
            samples[name].append((wall, cpu))
            summary = last if name == "collect_warm" else summary
    report: dict[str, object] = {
        "runs": args.runs,
        "tests": summary,
        "loadavg_1m_after": round(os.getloadavg()[0], 2),
    }
    for name, pairs in samples.items():
        report[name] = {
            "wall_s_median": round(statistics.median(w for w, _ in pairs), 2),
            "cpu_s_median": round(statistics.median(c for _, c in pairs), 2),
        }
    warm = report["collect_warm"]
    floor = report["pytest_version"]
    assert isinstance(warm, dict) and isinstance(floor, dict)
    report["warm_over_pytest_start_wall"] = round(
        warm["wall_s_median"] / max(floor["wall_s_median"], 1e-6), 1
    )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
