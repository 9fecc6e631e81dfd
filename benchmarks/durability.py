"""Durability under random kill -9: memories acknowledged vs memories stored, in one run.

A writer thread queues N distinct memories through :class:`MemoryClient` (each ``remember``
that returns is *acknowledged*: the entry is in Redis). Meanwhile K kills land at random
moments, each ``kill -9`` of either the real ``nika serve`` process or the embedded
``redis-server``, which is then restarted (Redis from its AOF, the service on its pending
entries). A ``remember`` that fails while Redis is down is retried until it goes through, as a
hook's spool would. At the end the service drains the stream, is stopped, and the Qdrant Edge
shard is read directly: every acknowledged memory must be there exactly once (same point id),
and nothing else.

Reported (JSON): ``acknowledged``, ``stored``, ``lost`` (acknowledged, not stored),
``duplicated`` (ids stored twice: impossible by construction, counted anyway), ``extra``
(stored, never acknowledged), ``kills`` by target, ``seconds``. The physical floor is
``lost = 0`` whatever the kills; the embedder's own speed is not what is measured here.

Run: ``.venv/bin/python benchmarks/durability.py [N] [KILLS] [SEED]`` (defaults 300 6 1: about
a minute and a half on 2 shared cores; the README's figures are ``400 10 2``, ~2 min, saved in
``results/durability.json``). Larger runs (``2000 20``) take ~10 min on a quiet machine.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

TENANT = "durable"


def _serve(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    out = log.open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "nika_tui", "serve"], stdout=out, stderr=out, env=env
    )


def _wait(probe: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if probe():
                return
        except Exception:  # noqa: BLE001 - Redis restarting: keep polling
            pass
        time.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}")


def run(n: int, kills: int, seed: int, root: Path, alternate: bool = False) -> dict[str, Any]:
    """One durability run in ``root`` (config, data); the report.

    ``alternate``: kill the service and Redis in turn instead of at random (tests use it so
    both targets are always hit).
    """
    import redis

    from nika_tui.domain.envelope import NikaMeta
    from nika_tui.domain.memory import Layer, memory_id
    from nika_tui.domain.requests import RememberRequest
    from nika_tui.domain.tenant import TenantConfig
    from nika_tui.errors import StoreUnavailable
    from nika_tui.paths import roots
    from nika_tui.services import redis_keys
    from nika_tui.services.config_store import save_tenant
    from nika_tui.services.memory_client import MemoryClient
    from nika_tui.services.redis_server import embedded_location, ensure_embedded, stop_embedded
    from nika_tui.services.vectors.edge import EdgeVectorStore

    env = {
        **os.environ,
        "NIKA_OS_CONFIG_DIR": str(root / "config"),
        "NIKA_OS_DATA_DIR": str(root / "data"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "NIKA_KERNEL_WATCH_S": "0",
    }
    env.pop("REDIS_URL", None)
    os.environ.update({k: env[k] for k in ("NIKA_OS_CONFIG_DIR", "NIKA_OS_DATA_DIR")})
    os.environ.pop("REDIS_URL", None)
    save_tenant(TenantConfig(tenant_id=TENANT, display_name="Durable"))
    url = ensure_embedded(roots(env))
    rng = random.Random(seed)
    log = root / "serve.log"
    service = _serve(env, log)
    acked: list[str] = []
    done = threading.Event()
    t0 = datetime(2026, 3, 1, tzinfo=UTC)

    def client() -> MemoryClient:
        return MemoryClient(redis.Redis.from_url(url, decode_responses=True, socket_timeout=5))

    def writer() -> None:
        c = client()
        for i in range(n):
            req = RememberRequest(
                tenant_id=TENANT,
                text=f"Fact {i}: service-{i} listens on port {10000 + i} in rack {i % 17}",
                meta=NikaMeta(timestamp=t0, project_id=f"p{i}"),
            )
            while True:
                try:
                    acked.append(c.remember(req))
                    break
                except StoreUnavailable:
                    time.sleep(0.05)  # Redis is down: retry, as a hook's spool replay would
                    c = client()
            time.sleep(rng.uniform(0, 0.01))
        done.set()

    started = time.monotonic()
    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    killed: Counter[str] = Counter()
    pidfile = embedded_location(roots(env)).pidfile
    for k in range(kills):
        time.sleep(rng.uniform(0.5, 3.0))
        if (k % 2 == 0) if alternate else rng.random() < 0.5:
            service.send_signal(signal.SIGKILL)
            service.wait(timeout=30)
            killed["service"] += 1
            service = _serve(env, log)
        else:
            pid = int(pidfile.read_text().strip())
            os.kill(pid, signal.SIGKILL)
            _wait(lambda p=pid: not Path(f"/proc/{p}").exists(), 10, "redis to die")
            killed["redis"] += 1
            ensure_embedded(roots(env))
    thread.join(timeout=600)
    r = redis.Redis.from_url(url, decode_responses=True)

    def drained() -> bool:
        pending = r.xpending(redis_keys.INGEST_STREAM, redis_keys.INGEST_GROUP)
        return r.xlen(redis_keys.INGEST_STREAM) == 0 and int(pending["pending"]) == 0

    _wait(drained, 900, "the ingest stream to drain")
    service.send_signal(signal.SIGTERM)
    service.wait(timeout=60)
    dead = r.xlen(redis_keys.INGEST_DEAD)
    stop_embedded(roots(env))
    store = EdgeVectorStore(root / "data" / "qdrant", 384)
    try:
        ids = [p.id for p in store.scroll(TENANT, Layer.SEMANTIC)]
    finally:
        store.close()
    expected = {memory_id(TENANT, key) for key in acked}
    counts = Counter(ids)
    return {
        "n": n,
        "acknowledged": len(expected),
        "stored": len(counts),
        "lost": len(expected - set(counts)),
        "duplicated": sum(1 for c in counts.values() if c > 1),
        "extra": len(set(counts) - expected),
        "dead_lettered": dead,
        "kills": dict(killed),
        "seed": seed,
        "seconds": round(time.monotonic() - started, 1),
    }


def main() -> None:
    """Parse ``[N] [KILLS] [SEED]`` and print the report as JSON."""
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    kills = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    with tempfile.TemporaryDirectory(prefix="nika-durability-") as tmp:
        print(json.dumps(run(n, kills, seed, Path(tmp)), indent=2))


if __name__ == "__main__":
    main()
