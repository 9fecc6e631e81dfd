"""Recall throughput and latency through the memory service under load (issue 16), one run.

The real ``nika serve`` process on the embedded Redis and Qdrant Edge (temp dirs), the real
embedder; N client *processes*, each calling ``MemoryClient.recall`` back to back (deadline
2.5 s, a hook's), on a tenant of ``PRELOAD`` memories. Phases, in this order:

1. idle service: 1, 4 and 20 clients, ``PHASE_S`` seconds each, on 50 queries asked over and
   over (the service's query cache answers them without the model after their first time),
   and 1 and 20 clients whose every query is new (``unique``: a counter appended), the cost
   of a prompt never asked before;
2. ingest alone: ``INGEST`` memories queued to a second tenant, time until drained;
3. 20 clients while another ``INGEST`` memories are ingested (same size, new texts): recall
   latency, and the ingest's throughput next to (2);
4. physical floor, service stopped, in this process on the same store: the embedder's time per
   query when 20 queries are embedded in one call, and the store's (the hybrid searches a
   recall makes, both layers) per query;
5. ``kill -9`` in the middle of an ingest of ``INGEST`` memories, then a restart: seconds from
   the spawn to the heartbeat, to the first answered recall, and one client's recall latency
   during the first ``REPLAY_WATCH_S`` of the replay (the backlog left then is reported).

Writes ``benchmarks/results/service_load.json`` and prints it. The machine may be shared: read
the ratios within the run (ingest with / without reads, service / floor), not absolute numbers.

Run: ``.venv/bin/python benchmarks/service_load.py [PHASE_S [PRELOAD INGEST]]`` (the issue's
sizes are the defaults, 3,000 and 2,000; smaller ones fit a run on a loaded machine).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PRELOAD = 3000
INGEST = 2000
PHASE_S = 15.0
REPLAY_WATCH_S = 60.0
DEADLINE_S = 2.5
"""A hook's RPC deadline."""
TENANT = "load"
WRITER = "writer"
SERVICES = ["billing", "auth", "search", "gateway", "web", "reports"]
QUERIES = [
    f"which port does the {SERVICES[i % 6]} service {i * 37 % PRELOAD} use?" for i in range(50)
]


def _fact(i: int) -> str:
    return f"The {SERVICES[i % 6]} service {i} listens on port {10000 + i} on host node-{i}"


def _queue(tenant: str, first: int, n: int) -> None:
    from datetime import UTC, datetime

    from nika_tui.domain.envelope import NikaMeta
    from nika_tui.domain.requests import RememberRequest
    from nika_tui.services.memory_client import MemoryClient
    from nika_tui.settings import Settings

    client = MemoryClient.open(Settings.from_env(), start_redis=True)
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    for i in range(first, first + n):
        meta = NikaMeta(timestamp=t0, project_id=f"p{i}")
        client.remember(RememberRequest(tenant_id=tenant, text=_fact(i), meta=meta))


def _drained() -> bool:
    from nika_tui.services import redis_keys
    from nika_tui.services.redis_server import connect
    from nika_tui.settings import Settings

    r = connect(Settings.from_env(), start=False)
    return int(r.xlen(redis_keys.INGEST_STREAM)) == 0


def _audited() -> bool:
    """True once the service's first debt audit has run on both tenants. It runs a minute
    after the start (then every 6 h) and holds the loop and the model for seconds; a phase
    that overlapped it measured the audit, at a place in the run that moved with the preload's
    speed."""
    from nika_tui.services import redis_keys
    from nika_tui.services.redis_server import connect
    from nika_tui.settings import Settings

    r = connect(Settings.from_env(), start=False)
    return all(r.xlen(redis_keys.debt_history(t)) > 0 for t in (TENANT, WRITER))


def _wait(probe: Any, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > end:
            raise TimeoutError(what)
        time.sleep(0.05)


def _client(
    ready: Any, go: Any, stop: Any, until: float, out: Any, seed: int, unique: bool = False
) -> None:
    """One client process: recalls back to back from ``go`` until ``stop`` or ``until``."""
    from nika_tui.domain.requests import RecallQuery
    from nika_tui.errors import NikaError, ServiceBusy
    from nika_tui.services.memory_client import MemoryClient
    from nika_tui.settings import Settings

    client = MemoryClient.open(Settings.from_env())
    client.timeout = DEADLINE_S
    client.service_alive()  # connected
    ready.put(seed)
    go.wait()
    cpu0 = time.process_time()
    lat: list[float] = []
    busy = errors = 0
    kinds: dict[str, int] = {}
    i = seed
    while not stop.is_set() and time.time() < until:
        text = QUERIES[i % len(QUERIES)]
        q = RecallQuery(tenant_id=TENANT, query=f"{text} (ask {seed}-{i})" if unique else text)
        i += 1
        t = time.perf_counter()
        try:
            client.recall(q)
        except ServiceBusy:
            busy += 1
            continue
        except NikaError as exc:
            errors += 1
            kind = f"{type(exc).__name__}: {exc.message[:80]}"
            kinds[kind] = kinds.get(kind, 0) + 1
            continue
        lat.append((time.perf_counter() - t) * 1000)
    cpu = time.process_time() - cpu0
    out.put({"lat": lat, "busy": busy, "errors": errors, "kinds": kinds, "cpu_s": cpu})


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a is not None and b else None


def _log(name: str, value: Any) -> Any:
    """Each phase's result on stderr as it comes (a run on a loaded machine is long)."""
    print(json.dumps({name: value}), file=sys.stderr, flush=True)
    return value


def _merged(counts: list[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in counts:
        for k, v in c.items():
            out[k] = out.get(k, 0) + v
    return out


def _pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return round(s[min(len(s) - 1, int(p / 100 * len(s)))], 1)


def _cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` (0 if unknown)."""
    if pid is None:
        return 0.0
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _load(
    n: int, seconds: float, during: Any = None, unique: bool = False, pid: int | None = None
) -> dict[str, Any]:
    """``n`` client processes for ``seconds`` (or until ``during()`` returns True); ``pid``:
    the service's, whose CPU per recall is reported beside the clients'."""
    ctx = mp.get_context("spawn")
    go, stop, out, ready = ctx.Event(), ctx.Event(), ctx.Queue(), ctx.Queue()
    until = time.time() + 3600
    args = [(ready, go, stop, until, out, k * 7, unique) for k in range(n)]
    procs = [ctx.Process(target=_client, args=a) for a in args]
    for p in procs:
        p.start()
    for _ in procs:  # every client imported and connected before the clock starts
        ready.get(timeout=600)
    if during is not None:
        during_start = during("start")
    t = time.perf_counter()
    service_cpu = _cpu_s(pid)
    go.set()
    if during is None:
        time.sleep(seconds)
    else:
        _wait(lambda: during("done"), 900, "ingest during reads")
    stop.set()
    took = time.perf_counter() - t
    service_cpu = _cpu_s(pid) - service_cpu
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    lat = [x for r in results for x in r["lat"]]
    report = {
        "clients": n,
        "unique_queries": unique,
        "seconds": round(took, 2),
        "loadavg_1m_after": round(os.getloadavg()[0], 2),
        "recalls": len(lat),
        "recalls_per_s": round(len(lat) / took, 1),
        "p50_ms": _pct(lat, 50),
        "p95_ms": _pct(lat, 95),
        "p99_ms": _pct(lat, 99),
        "busy_retry": sum(r["busy"] for r in results),
        "errors": sum(r["errors"] for r in results),
        "error_kinds": _merged([r["kinds"] for r in results]),
        # Where the 2 cores went: CPU milliseconds per answered recall, in the service process
        # (every thread: readers, loop, ingest) and summed over the client processes.
        "service_cpu_ms_per_recall": round(service_cpu * 1000 / max(1, len(lat)), 2),
        "clients_cpu_ms_per_recall": round(
            sum(r["cpu_s"] for r in results) * 1000 / max(1, len(lat)), 2
        ),
    }
    if during is not None:
        report["during"] = during_start
    return report


def _serve(root: Path) -> subprocess.Popen[bytes]:
    log = (root / "serve.log").open("ab")
    return subprocess.Popen([sys.executable, "-m", "nika_tui", "serve"], stdout=log, stderr=log)


def _alive() -> bool:
    from nika_tui.services.memory_client import MemoryClient
    from nika_tui.settings import Settings

    return MemoryClient.open(Settings.from_env()).service_alive()


def _ingest_alone(first: int) -> dict[str, Any]:
    t = time.perf_counter()
    _queue(WRITER, first, INGEST)
    _wait(_drained, 1800, "ingest alone")
    took = time.perf_counter() - t
    return {"memories": INGEST, "seconds": round(took, 2), "per_s": round(INGEST / took, 1)}


def _floor() -> dict[str, Any]:
    """The embedder batched, and the store, per query, in this process (service stopped)."""
    from nika_tui.domain.memory import Layer
    from nika_tui.paths import data_dir
    from nika_tui.services.embeddings import open_embedder
    from nika_tui.services.vectors.edge import EdgeVectorStore
    from nika_tui.settings import Settings

    embedder = open_embedder(Settings.from_env())
    batch = QUERIES[:20]
    embedder.embed(batch)  # warm-up
    rounds = 10
    t = time.perf_counter()
    for _ in range(rounds):
        vectors = embedder.embed(batch)
    embed_ms = (time.perf_counter() - t) * 1000 / (rounds * len(batch))
    t = time.perf_counter()
    for q in batch:
        embedder.embed([q])
    single_ms = (time.perf_counter() - t) * 1000 / len(batch)
    store = EdgeVectorStore(data_dir() / "qdrant", embedder.dimension)
    try:
        for layer in Layer:  # warm-up: shards opened
            store.search_hybrid(TENANT, layer, vectors[0], batch[0], limit=10, with_vectors=True)
        t = time.perf_counter()
        for _ in range(rounds):
            for q, v in zip(batch, vectors, strict=True):
                for layer in Layer:
                    store.search_hybrid(TENANT, layer, v, q, limit=10, with_vectors=True)
        store_ms = (time.perf_counter() - t) * 1000 / (rounds * len(batch))
    finally:
        store.close()
    return {
        "embed_ms_per_query_batched_20": round(embed_ms, 2),
        "embed_ms_one_query_alone": round(single_ms, 2),
        "store_ms_per_query": round(store_ms, 2),
        "floor_ms_per_query": round(embed_ms + store_ms, 2),
        "floor_recalls_per_s_one_core": round(1000 / (embed_ms + store_ms), 1),
    }


def _restart_with_backlog(root: Path, first: int) -> dict[str, Any]:
    """kill -9 mid-ingest, restart, time the first answered recall and the replay."""
    from nika_tui.domain.requests import RecallQuery
    from nika_tui.errors import NikaError
    from nika_tui.services import redis_keys
    from nika_tui.services.memory_client import MemoryClient
    from nika_tui.services.redis_server import connect
    from nika_tui.settings import Settings

    r = connect(Settings.from_env(), start=False)
    proc = _serve(root)
    _wait(_alive, 300, "service up")
    before = int(r.hget(redis_keys.metrics(WRITER), "ingested") or 0)
    _queue(WRITER, first, INGEST)
    _wait(lambda: int(r.hget(redis_keys.metrics(WRITER), "ingested") or 0) >= before + 50, 600,
          "ingest under way")  # fmt: skip
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    backlog = int(r.xlen(redis_keys.INGEST_STREAM))
    pending = int(r.xpending(redis_keys.INGEST_STREAM, redis_keys.INGEST_GROUP)["pending"])
    r.delete(redis_keys.SERVICE_HEARTBEAT)  # as `nika up` finds it: the pid is dead anyway
    client = MemoryClient(r, timeout=DEADLINE_S)
    t0 = time.perf_counter()
    proc = _serve(root)
    _wait(_alive, 300, "service up after kill -9")
    beat_s = time.perf_counter() - t0
    first_read: float | None = None
    lat: list[float] = []
    busy = 0
    # The first REPLAY_WATCH_S of the replay (on a loaded machine the whole one takes minutes).
    t_beat = time.perf_counter()
    while (
        int(r.xlen(redis_keys.INGEST_STREAM)) > 0 and time.perf_counter() - t_beat < REPLAY_WATCH_S
    ):
        t = time.perf_counter()
        try:
            client.recall(RecallQuery(tenant_id=TENANT, query=QUERIES[len(lat) % len(QUERIES)]))
        except NikaError:
            busy += 1
            continue
        lat.append((time.perf_counter() - t) * 1000)
        if first_read is None:
            first_read = time.perf_counter() - t0
    watched_s = time.perf_counter() - t0
    left = int(r.xlen(redis_keys.INGEST_STREAM))
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)
    return {
        "backlog_entries": backlog,
        "pending_at_kill": pending,
        "spawn_to_heartbeat_s": round(beat_s, 2),
        "spawn_to_first_recall_s": round(first_read, 2) if first_read else None,
        "heartbeat_to_first_recall_s": round(first_read - beat_s, 2) if first_read else None,
        "recalls_during_replay": len(lat),
        "busy_or_failed_during_replay": busy,
        "p50_ms_during_replay": _pct(lat, 50),
        "p95_ms_during_replay": _pct(lat, 95),
        "watched_s": round(watched_s, 2),
        "backlog_left_after_watch": left,
    }


def main(phase_s: float, restart_only: bool = False) -> None:
    root = Path(tempfile.mkdtemp(prefix="nika-load-"))
    os.environ.update(
        {
            "NIKA_OS_CONFIG_DIR": str(root / "config"),
            "NIKA_OS_DATA_DIR": str(root / "data"),
            "HF_HUB_OFFLINE": "1",
        }
    )
    for name in ("REDIS_URL", "QDRANT_URL"):
        os.environ.pop(name, None)
    from nika_tui.domain.tenant import TenantConfig
    from nika_tui.services.config_store import save_tenant
    from nika_tui.services.redis_server import stop_embedded

    for tenant in (TENANT, WRITER):
        save_tenant(TenantConfig(tenant_id=tenant, display_name=tenant))
    report: dict[str, Any] = {"cpus": os.cpu_count(), "preload": PRELOAD, "ingest": INGEST}
    report["readers"] = os.environ.get("NIKA_READERS", "default")
    proc: subprocess.Popen[bytes] | None = None
    try:
        if restart_only:  # the tenant read during the replay, then the restart alone
            _queue(TENANT, 0, PRELOAD)
            report["restart"] = _log("restart", _restart_with_backlog(root, PRELOAD))
            print(json.dumps(report, indent=2))
            return
        _queue(TENANT, 0, PRELOAD)
        proc = _serve(root)
        _wait(_alive, 300, "service up")
        t = time.perf_counter()
        _wait(_drained, 1800, "preload")
        report["preload_s"] = round(time.perf_counter() - t, 1)
        t = time.perf_counter()
        _wait(_audited, 300, "the first debt audit")
        report["first_audit_wait_s"] = round(time.perf_counter() - t, 1)
        report["loadavg_1m_before"] = round(os.getloadavg()[0], 2)
        pid = proc.pid
        report["idle"] = [_log(f"idle_{n}", _load(n, phase_s, pid=pid)) for n in (1, 4, 20)]
        report["idle_unique"] = [
            _log(f"idle_{n}_unique", _load(n, phase_s, unique=True, pid=pid)) for n in (1, 20)
        ]
        report["ingest_alone"] = _log("ingest_alone", _ingest_alone(PRELOAD))
        state: dict[str, float] = {}

        def during(what: str) -> Any:
            if what == "start":
                state["t"] = time.perf_counter()
                _queue(WRITER, PRELOAD + INGEST, INGEST)
                return {"queued_s": round(time.perf_counter() - state["t"], 2)}
            if _drained():
                state.setdefault("took", time.perf_counter() - state["t"])
                return True
            return False

        report["during_ingest"] = _log("during_ingest", _load(20, phase_s, during, pid=pid))
        per_s = INGEST / state["took"]
        report["during_ingest"]["ingest_per_s"] = round(per_s, 1)
        report["ingest_kept"] = round(per_s / report["ingest_alone"]["per_s"], 3)
        idle20 = report["idle"][2]["p95_ms"]
        report["p95_during_over_idle"] = _ratio(report["during_ingest"]["p95_ms"], idle20)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        proc = None
        report["floor"] = _log("floor", _floor())
        report["service_p50_1_client_over_floor"] = _ratio(
            report["idle"][0]["p50_ms"], report["floor"]["floor_ms_per_query"]
        )
        report["restart"] = _log("restart", _restart_with_backlog(root, PRELOAD + 2 * INGEST))
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
        stop_embedded()
        shutil.rmtree(root, ignore_errors=True)
    text = json.dumps(report, indent=2)
    out = Path(__file__).parent / "results" / "service_load.json"
    out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] != "restart":
        PRELOAD, INGEST = int(sys.argv[2]), int(sys.argv[3])
    if sys.argv[1:2] == ["restart"]:
        main(0, restart_only=True)
    else:
        main(float(sys.argv[1]) if len(sys.argv) > 1 else PHASE_S)
