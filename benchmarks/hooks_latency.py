"""Agent-hook cost: wall time of ``nika hook claude EVENT`` as Claude Code runs it, and of the
context-fill read on growing transcripts.

Runs against a private embedded Redis in a temp dir (no memory service: SessionStart then
skips its recall, as on a machine where the service is down). Prints a JSON report and writes
``benchmarks/results/hooks_latency.json``.

    .venv/bin/python benchmarks/hooks_latency.py [--runs 20]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "claude"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def hook_runs(env: dict[str, str], tmp: Path, runs: int) -> dict[str, dict[str, float]]:
    transcript = tmp / "session.jsonl"
    shutil.copy(DATA / "transcript_session.jsonl", transcript)
    out: dict[str, dict[str, float]] = {}
    for event, sample in (
        ("SessionStart", "hook_session_start.json"),
        ("UserPromptSubmit", "hook_user_prompt_submit.json"),
        ("Stop", "hook_stop.json"),
        ("PreCompact", "hook_pre_compact.json"),
    ):
        payload = json.loads((DATA / sample).read_text())
        payload["transcript_path"] = str(transcript)
        payload["cwd"] = str(tmp)
        data = json.dumps(payload).encode()
        times: list[float] = []
        for i in range(runs):
            if event == "UserPromptSubmit":  # distinct prompts: no idempotent short-cut
                payload["prompt"] = f"benchmark prompt number {i} about the retry policy"
                data = json.dumps(payload).encode()
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "nika_tui", "hook", "claude", event],
                input=data,
                capture_output=True,
                env=env,
                check=True,
            )
            times.append(time.perf_counter() - start)
        out[event] = {
            "p50_s": round(statistics.median(times), 3),
            "p95_s": round(_pct(times, 0.95), 3),
            "max_s": round(max(times), 3),
        }
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    out["python_startup_only"] = {"p50_s": round(time.perf_counter() - start, 3)}
    return out


def fill_reads(tmp: Path) -> dict[str, float]:
    from nika_tui.services.transcripts import read_fill

    lines = (DATA / "transcript_session.jsonl").read_text().splitlines()
    filler = json.dumps({"type": "user", "sessionId": "s", "message": {"content": "x" * 4000}})
    out: dict[str, float] = {}
    for mb in (5, 50):
        path = tmp / f"t{mb}.jsonl"
        with path.open("w") as fh:
            while fh.tell() < mb * 1024 * 1024:
                fh.write(filler + "\n")
            fh.write(lines[-2] + "\n")
        start = time.perf_counter()
        for _ in range(20):
            assert read_fill(path).tokens == 18866
        out[f"read_fill_{mb}MB_ms"] = round(1000 * (time.perf_counter() - start) / 20, 2)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from nika_tui.services.redis_server import ensure_embedded, stop_embedded

    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        env = {
            **os.environ,
            "NIKA_OS_DATA_DIR": str(tmp / "data"),
            "NIKA_OS_CONFIG_DIR": str(tmp / "config"),
            "NIKA_TENANT_ID": "bench",
        }
        env.pop("REDIS_URL", None)
        env["REDIS_URL"] = ensure_embedded(env)
        try:
            report = {
                "runs_per_event": args.runs,
                "hook_wall_time": hook_runs(env, tmp, args.runs),
                "fill": fill_reads(tmp),
            }
        finally:
            stop_embedded(env)
    print(json.dumps(report, indent=2))
    results = ROOT / "benchmarks" / "results"
    results.mkdir(exist_ok=True)
    (results / "hooks_latency.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
