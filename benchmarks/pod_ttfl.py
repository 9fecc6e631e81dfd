"""pod_ttfl benchmark: time from ``spawn`` to the first output line of a tenant kernel.

Spawns N kernels (default 20) one after the other on a private tmux socket, each running the
stand-in agent as a ``shell`` tenant's ``kernel.command``; earlier kernels keep running, as they
would on a machine hosting N tenants. pod_ttfl is measured by :meth:`KernelManager.spawn`
itself (monotonic clock, from before ``tmux new-session`` to the first non-empty pane line)
and read back from Redis (the ``pod_ttfl`` key), exactly as the dashboard would.

Everything runs in a temp dir with its own embedded Redis and tmux server, removed afterwards.

    .venv/bin/python benchmarks/pod_ttfl.py [-n 20] [--out benchmarks/results/pod_ttfl.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

TARGET_P95_S = 2.0


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0–100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, int(-(-q * len(ordered) // 100)))  # ceil(q/100 * n)
    return ordered[min(rank, len(ordered)) - 1]


def run(n: int) -> dict[str, Any]:
    """Spawn ``n`` kernels and return the report."""
    with tempfile.TemporaryDirectory(prefix="nika-pod-ttfl-") as tmp:
        root = Path(tmp)
        env_overrides = {
            "NIKA_OS_CONFIG_DIR": str(root / "config"),
            "NIKA_OS_DATA_DIR": str(root / "data"),
            "NIKA_TMUX_SOCKET": f"nika-bench-{uuid.uuid4().hex[:8]}",
        }
        os.environ.update(env_overrides)
        os.environ.pop("REDIS_URL", None)
        os.environ.pop("TMUX", None)

        from nika_tui.domain.tenant import KernelConfig, TenantConfig
        from nika_tui.engine.kernels.manager import KernelManager
        from nika_tui.services import kernel_store
        from nika_tui.services.config_store import save_tenant
        from nika_tui.services.redis_server import stop_embedded
        from nika_tui.settings import Settings

        workdir = root / "work"
        workdir.mkdir()
        command = [sys.executable, "-m", "nika_tui.assets.standin_agent"]
        manager = KernelManager(Settings.from_env())
        samples: list[float] = []
        wall = time.monotonic()
        try:
            for i in range(n):
                tenant_id = f"bench-{i:03d}"
                save_tenant(
                    TenantConfig(
                        tenant_id=tenant_id,
                        display_name=f"Bench {i}",
                        kernel=KernelConfig(workdir=str(workdir), command=command),
                    )
                )
                result = manager.spawn(tenant_id)
                if result.pod_ttfl_s is None:
                    raise SystemExit(f"{tenant_id}: no output within the spawn timeout")
                stored = kernel_store.pod_ttfl_samples(manager.redis, tenant_id)
                samples.append(stored[0])
            elapsed = time.monotonic() - wall
            running = sum(manager.is_running(f"bench-{i:03d}") for i in range(n))
        finally:
            subprocess.run(
                ["tmux", "-L", env_overrides["NIKA_TMUX_SOCKET"], "kill-server"],
                capture_output=True,
                check=False,
            )
            stop_embedded()
    tmux_version = subprocess.run(
        ["tmux", "-V"], capture_output=True, text=True, check=False
    ).stdout.strip()
    p95 = percentile(samples, 95)
    return {
        "benchmark": "pod_ttfl",
        "definition": "seconds from KernelManager.spawn to the first non-empty pane line",
        "agent": "nika_tui.assets.standin_agent (python)",
        "n": n,
        "running_at_end": running,
        "p50_s": round(statistics.median(samples), 4),
        "p95_s": round(p95, 4),
        "max_s": round(max(samples), 4),
        "min_s": round(min(samples), 4),
        "mean_s": round(statistics.fmean(samples), 4),
        "target_p95_s": TARGET_P95_S,
        "meets_target": p95 <= TARGET_P95_S,
        "total_wall_s": round(elapsed, 3),
        "samples_s": [round(s, 4) for s in samples],
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "tmux": tmux_version,
            "platform": platform.platform(),
        },
    }


def main() -> int:
    """Run the benchmark, print a table and write the JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20, help="kernels to spawn")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "results" / "pod_ttfl.json",
        help="where to write the JSON report",
    )
    args = parser.parse_args()
    report = run(args.n)
    print(f"pod_ttfl over {report['n']} spawns (stand-in agent, {report['machine']}):")
    for key in ("p50_s", "p95_s", "max_s", "min_s", "mean_s", "total_wall_s"):
        print(f"  {key:<13} {report[key]}")
    print(f"  target p95 ≤ {TARGET_P95_S} s: {'met' if report['meets_target'] else 'NOT met'}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0 if report["meets_target"] else 1


if __name__ == "__main__":
    sys.exit(main())
