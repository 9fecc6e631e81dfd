"""Agent-hook cost: wall time of ``nika hook claude EVENT`` as Claude Code runs it, and of the
context-fill read on growing transcripts.

Runs against a private embedded Redis in a temp dir with the memory service running and idle
(``--no-service``: without it, SessionStart then skips its recall). Each hook run is timed
through the hook server (the default path) and in-process (``NIKA_HOOKD=0``), interleaved with
``python -c pass`` — the physical floor of any Python hook — so that all three see the same
load; the report gives the ratio, and from the hooks log the time inside each run to its answer
and to its end (the agent waits for the answer only; captures and bookkeeping run after it).
Bytecode is cached, as in an installed package. Prints JSON, writes
``benchmarks/results/hooks_latency.json``.

    .venv/bin/python benchmarks/hooks_latency.py [--runs 20] [--no-service]
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


def _timed(argv: list[str], env: dict[str, str], data: bytes | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(argv, input=data, capture_output=True, env=env, check=True)
    return time.perf_counter() - start


def _summary(times: list[float]) -> dict[str, float]:
    return {
        "p50_s": round(statistics.median(times), 4),
        "p95_s": round(_pct(times, 0.95), 4),
        "max_s": round(max(times), 4),
    }


def hook_runs(env: dict[str, str], tmp: Path, runs: int) -> dict[str, dict[str, float]]:
    """Each event's wall time through the hook server (the default path) and in-process
    (``NIKA_HOOKD=0``, the path before the server), interleaved run by run with
    ``python -c pass`` so that all three see the same machine load."""
    transcript = tmp / "session.jsonl"
    shutil.copy(DATA / "transcript_session.jsonl", transcript)
    in_process = {**env, "NIKA_HOOKD": "0"}
    hook = [sys.executable, "-m", "nika_tui", "hook", "claude"]
    # One run starts the server (a first run pays the in-process cost once, then never again).
    _timed([*hook, "Notification"], env, b"{}")
    out: dict[str, dict[str, float]] = {}
    floor: list[float] = []
    for event, sample in (
        ("SessionStart", "hook_session_start.json"),
        ("UserPromptSubmit", "hook_user_prompt_submit.json"),
        ("Stop", "hook_stop.json"),
        ("PreCompact", "hook_pre_compact.json"),
    ):
        payload = json.loads((DATA / sample).read_text())
        payload["transcript_path"] = str(transcript)
        payload["cwd"] = str(tmp)
        served: list[float] = []
        direct: list[float] = []
        floor_here: list[float] = []  # this event's own floor: the load drifts between events
        for i in range(runs):
            if event == "UserPromptSubmit":  # distinct prompts: no idempotent short-cut
                payload["prompt"] = f"benchmark prompt number {i} about the retry policy"
            data = json.dumps(payload).encode()
            floor_here.append(_timed([sys.executable, "-c", "pass"], env))
            served.append(_timed([*hook, event], env, data))
            direct.append(_timed([*hook, event], in_process, data))
        floor += floor_here
        out[event] = {
            **_summary(served),
            "in_process_p50_s": round(statistics.median(direct), 4),
            "python_startup_p50_s": round(statistics.median(floor_here), 4),
            "p50_over_python_startup": round(
                statistics.median(served) / statistics.median(floor_here), 2
            ),
            **_child_times(env, event),
        }
    out["python_startup_only"] = _summary(floor)
    return out


def _child_times(env: dict[str, str], event: str) -> dict[str, float]:
    """From the hooks log: inside the run, when the answer was ready and when the run ended
    (the work after the answer — captures, bookkeeping — is not in the wall time above, so it
    is shown here)."""
    log = Path(env["NIKA_OS_DATA_DIR"]) / "logs" / "hooks.log"
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    mine = [e for e in entries if e.get("event") == event and "answer_ms" in e]
    if not mine:
        return {}
    return {
        "run_answer_p50_ms": round(statistics.median(e["answer_ms"] for e in mine), 1),
        "run_total_p50_ms": round(statistics.median(e["ms"] for e in mine), 1),
    }


def _start_service(env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``nika serve`` in the background; returns once its heartbeat is up (service idle)."""
    import redis

    proc = subprocess.Popen(
        [sys.executable, "-m", "nika_tui", "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis.from_url(env["REDIS_URL"], decode_responses=True)
    deadline = time.monotonic() + 120
    while not client.get("nika:service:heartbeat"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the memory service did not start (see `nika serve`)")
        time.sleep(0.2)
    return proc


def fill_reads(tmp: Path) -> dict[str, float]:
    from nika_tui.services.transcripts.read import read_fill

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
    parser.add_argument(
        "--no-service", action="store_true", help="without the memory service (no recall)"
    )
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
        # Bytecode is cached, as in an installed package (pip compiles it), but in the temp dir
        # rather than in the checkout; PYTHONDONTWRITEBYTECODE would make every run compile.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        env["REDIS_URL"] = ensure_embedded(env)
        service = None if args.no_service else _start_service(env)
        try:
            report = {
                "runs_per_event": args.runs,
                "service": "idle" if service else "not running",
                "bytecode": "cached (PYTHONPYCACHEPREFIX in the temp dir)",
                "load_avg_1m_before": round(os.getloadavg()[0], 2),
                "hook_wall_time": hook_runs(env, tmp, args.runs),
                "fill": fill_reads(tmp),
                "load_avg_1m_after": round(os.getloadavg()[0], 2),
            }
        finally:
            if service is not None:
                service.terminate()
                service.wait(timeout=60)
            stop_embedded(env)
    print(json.dumps(report, indent=2))
    results = ROOT / "benchmarks" / "results"
    results.mkdir(exist_ok=True)
    (results / "hooks_latency.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
