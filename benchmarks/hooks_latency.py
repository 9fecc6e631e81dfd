"""Agent-hook cost: wall time of ``nika hook CLI EVENT`` for each agent CLI's events that do
work before the agent goes on (Claude Code and Codex SessionStart / UserPromptSubmit, Gemini
CLI SessionStart / BeforeAgent, OpenCode's first UserPromptSubmit), and of the context-fill
read on growing transcripts.

Runs against a private embedded Redis in a temp dir with the memory service running and idle,
on a tenant seeded with ``--facts`` facts across six projects through the real ingest
(:mod:`benchmarks.hooks_latency_setup`), so every SessionStart builds a real digest and every
prompt runs a real recall. Payloads are the fields each CLI sends, a new session and a distinct
question (about a seeded fact of the checkout's project) per run. Each run is timed:

- **warm**: through a hook server that has already served runs (the steady state);
- **cold**: the first run after the hook server starts (a server is started, waited for,
  used once and stopped, ``--cold-runs`` times per event);

each run meeting an idle service (the previous run's captures ingested first), interleaved
with the floor: ``python -c pass`` (the physical floor of any Python hook) and the service op
the answer waits for, alone, from this process (a prompt's ``recall`` for the same question:
the RPC, the embedding and the search; SessionStart's ``recent`` for the project). Bytecode
is cached, as in an installed package. Prints JSON, writes
``benchmarks/results/hooks_latency.json``.

    .venv/bin/python benchmarks/hooks_latency.py [--runs 20] [--cold-runs 5] [--facts 300]
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
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import hooks_latency_setup as setup  # noqa: E402

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
        "p50_ms": round(1000 * statistics.median(times), 1),
        "p95_ms": round(1000 * _pct(times, 0.95), 1),
        "max_ms": round(1000 * max(times), 1),
        "n": len(times),
    }


class HookServer:
    """A hook server of this benchmark's own (so that cold runs can start and stop it)."""

    def __init__(self, env: dict[str, str]) -> None:
        from nika_tui.hookd.client import socket_path

        self.env = env
        self.path = socket_path(env)
        self._err = Path(self.path).with_suffix(".stderr")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        import socket

        self._err.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nika_tui.hookd.server", self.path],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._err.open("wb"),  # a file, not a pipe nobody reads while it serves
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # ready once it accepts (it preloads first)
            if self.proc.poll() is not None:
                why = self._err.read_text(errors="replace").strip().splitlines()
                raise SystemExit(
                    f"the hook server exited at start (status {self.proc.returncode}): "
                    f"{why[-1] if why else 'nothing on stderr'}"
                )
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                try:
                    probe.connect(self.path)
                except OSError:
                    time.sleep(0.02)
                    continue
            return
        raise SystemExit("the hook server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
            self.proc = None
        Path(self.path).unlink(missing_ok=True)


class Bench:
    """The seeded tenant, its checkouts and transcripts, and one question pool per project."""

    def __init__(self, env: dict[str, str], tmp: Path, facts: list[setup.Fact]) -> None:
        from nika_tui.services.memory_client import MemoryClient
        from nika_tui.settings import Settings

        self.env = env
        self.dirs = setup.checkouts(tmp)
        self.paths = setup.transcripts(tmp)
        self.facts = facts
        self.client = MemoryClient.open(Settings.from_env(env))
        self.turn = 0
        self.last = facts[0]

    def next_run(self, cli: str, event: str) -> tuple[bytes, setup.Fact]:
        fact = self.facts[self.turn % len(self.facts)]
        self.turn += 1
        session = str(uuid.uuid4())
        body = setup.payload(
            cli, event, session, self.dirs[fact.project], fact.question, self.paths
        )
        return json.dumps(body).encode(), fact

    def settle(self, cli: str) -> None:
        """Wait until the last run's deferred work is done and the service has ingested every
        capture: each run meets an idle service, as a person's next prompt would."""
        from nika_tui.hooks.dispatch import wait_settled
        from nika_tui.services import redis_keys

        wait_settled(self.env, setup.TENANT, cli, timeout_s=60)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            groups = self.client.redis.xinfo_groups(redis_keys.INGEST_STREAM)
            if all(g.get("pending", 0) == 0 and not g.get("lag") for g in groups):
                return
            time.sleep(0.05)

    def hook(self, cli: str, event: str) -> float:
        """One hook run as the CLI runs it (in the checkout, payload on stdin): wall seconds."""
        self.settle(cli)
        data, fact = self.next_run(cli, event)
        argv = [sys.executable, "-m", "nika_tui", "hook", cli, event]
        start = time.perf_counter()
        subprocess.run(
            argv, input=data, capture_output=True, env=self.env, check=True,
            cwd=self.dirs[fact.project],
        )  # fmt: skip
        self.last = fact
        return time.perf_counter() - start

    def op_alone(self, event: str, fact: setup.Fact) -> float:
        """The service op the event's answer waits for, from this process: SessionStart's
        ``recent`` (the digest's newest facts), a prompt's ``recall``."""
        from nika_tui.domain.requests import RecallQuery

        start = time.perf_counter()
        if event == "SessionStart":
            self.client.recent(setup.TENANT, fact.project, 12)
        else:
            q = RecallQuery(
                tenant_id=setup.TENANT, query=fact.question, project_id=fact.project, limit=5
            )
            self.client.recall(q)
        return time.perf_counter() - start


def hook_runs(bench: Bench, server: HookServer, runs: int, cold_runs: int) -> dict[str, Any]:
    """Warm and cold wall times per (CLI, event), each beside its own floor."""
    out: dict[str, Any] = {}
    floor_all: list[float] = []
    recall_all: list[float] = []
    server.start()
    bench.hook("claude", "Notification")  # the server's first run, untimed
    for cli, event in setup.CASES:
        warm: list[float] = []
        floor: list[float] = []
        recall: list[float] = []
        for _ in range(runs):
            floor.append(_timed([sys.executable, "-c", "pass"], bench.env))
            warm.append(bench.hook(cli, event))
            recall.append(bench.op_alone(event, bench.last))
        out[f"{cli} {event}"] = {
            "warm": _summary(warm),
            "python_c_pass": _summary(floor),
            "service_op_alone": _summary(recall),
        }
        floor_all += floor
        recall_all += recall
    server.stop()
    for cli, event in setup.CASES:
        cold: list[float] = []
        for _ in range(cold_runs):
            server.start()
            cold.append(bench.hook(cli, event))
            server.stop()
        out[f"{cli} {event}"]["cold"] = _summary(cold)
    out["python_c_pass_all"] = _summary(floor_all)
    out["service_op_alone_all"] = _summary(recall_all)
    out["inside_the_run"] = _child_times(bench.env)
    return out


def _child_times(env: dict[str, str]) -> dict[str, dict[str, float]]:
    """From the hooks log: inside each run, when the answer was ready and when the run ended
    (captures and bookkeeping run after the answer: not in the wall time the agent waits)."""
    log = Path(env["NIKA_OS_DATA_DIR"]) / "logs" / "hooks.log"
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    out: dict[str, dict[str, float]] = {}
    for cli, event in setup.CASES:
        mine = [
            e
            for e in entries
            if e.get("event") == event and e.get("cli") == cli and "answer_ms" in e
        ]
        if mine:
            out[f"{cli} {event}"] = {
                "answer_p50_ms": round(statistics.median(e["answer_ms"] for e in mine), 1),
                "total_p50_ms": round(statistics.median(e["ms"] for e in mine), 1),
            }
    return out


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
    parser.add_argument("--runs", type=int, default=20, help="warm runs per event")
    parser.add_argument("--cold-runs", type=int, default=5, help="cold runs per event")
    parser.add_argument("--facts", type=int, default=300, help="facts seeded (≤ 336)")
    args = parser.parse_args()
    from nika_tui.paths import roots
    from nika_tui.services.redis_server import ensure_embedded, stop_embedded

    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        env = {
            **os.environ,
            "NIKA_OS_DATA_DIR": str(tmp / "data"),
            "NIKA_OS_CONFIG_DIR": str(tmp / "config"),
            "NIKA_TENANT_ID": setup.TENANT,
            "NIKA_HOOKD_IDLE_S": "3600",
        }
        env.pop("REDIS_URL", None)
        # Bytecode is cached, as in an installed package (pip compiles it), but in the temp dir
        # rather than in the checkout; PYTHONDONTWRITEBYTECODE would make every run compile.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        env["REDIS_URL"] = ensure_embedded(roots(env))
        setup.configure(env)
        service = _start_service(env)
        server = HookServer(env)
        try:
            facts = setup.facts(args.facts)
            seeded = setup.seed(env, facts)
            bench = Bench(env, tmp, facts)
            # The service's first query embedding is a cold start of the model, not a hook's.
            bench.op_alone("UserPromptSubmit", facts[0])
            report = {
                "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "cpus": os.cpu_count(),
                "service": "idle",
                "bytecode": "cached (PYTHONPYCACHEPREFIX in the temp dir)",
                "seeded": seeded,
                "warm_runs_per_event": args.runs,
                "cold_runs_per_event": args.cold_runs,
                "load_avg_1m_before": round(os.getloadavg()[0], 2),
                "hook_wall_time": hook_runs(bench, server, args.runs, args.cold_runs),
                "fill": fill_reads(tmp),
                "load_avg_1m_after": round(os.getloadavg()[0], 2),
            }
        finally:
            server.stop()
            service.terminate()
            service.wait(timeout=60)
            stop_embedded(roots(env))
            shutil.rmtree(tmp / "work", ignore_errors=True)
    print(json.dumps(report, indent=2))
    results = ROOT / "benchmarks" / "results"
    results.mkdir(exist_ok=True)
    (results / "hooks_latency.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
