"""Measure the host for the indicators: /proc, the ingest stream, the kernels' pod_ttfl.

Runs in the memory service (one sample a minute) and writes each sample to Redis
(:data:`~nika_tui.services.redis_keys.SCALE_SAMPLES`, newest first, two hours kept) so that
``nika scale status`` in another process reads the same windows.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import redis

from nika_tui.paths import Roots
from nika_tui.scale.indicators import Sample
from nika_tui.services import redis_keys
from nika_tui.services.config_store import list_tenant_ids
from nika_tui.services.kernel_store import pod_ttfl_samples

KEEP = 120


def new_head(previous: Sequence[float], current: Sequence[float]) -> list[float]:
    """The values pushed (newest first) onto a trimmed list since ``previous`` was read."""
    if not previous:
        return list(current)
    for k in range(len(current) + 1):
        tail = list(current[k:])
        if tail == list(previous[: len(tail)]) and (tail or k == len(current)):
            return list(current[:k])
    return list(current)


def read_cpu_times(proc: Path = Path("/proc")) -> tuple[int, int]:
    """``(busy, total)`` jiffies from ``/proc/stat``'s first line."""
    fields = [int(x) for x in (proc / "stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields[:8])
    return total - idle, total


def read_ram_percent(proc: Path = Path("/proc")) -> float | None:
    """Used RAM (MemTotal − MemAvailable) in percent."""
    info: dict[str, int] = {}
    for line in (proc / "meminfo").read_text().splitlines():
        key, _, rest = line.partition(":")
        if rest.split():
            info[key] = int(rest.split()[0])
    if not info.get("MemTotal") or "MemAvailable" not in info:
        return None
    return 100.0 * (info["MemTotal"] - info["MemAvailable"]) / info["MemTotal"]


class HostSampler:
    """Takes samples; keeps the previous CPU times and pod_ttfl lists to compute deltas."""

    def __init__(self, client: redis.Redis, where: Roots, proc: Path = Path("/proc")) -> None:
        self.client = client
        self.where = where
        """The tenants' configs, and the data root whose disk is sampled."""
        self.store_dir = where.data
        self.proc = proc
        self._cpu: tuple[int, int] | None = None
        self._ttfl: dict[str, list[float]] = {}

    def _cpu_percent(self) -> float | None:
        busy, total = read_cpu_times(self.proc)
        previous, self._cpu = self._cpu, (busy, total)
        if previous is None or total <= previous[1]:
            return None
        return 100.0 * (busy - previous[0]) / (total - previous[1])

    def _new_ttfl(self) -> tuple[float, ...]:
        fresh: list[float] = []
        for tenant_id in list_tenant_ids(self.where):
            current = pod_ttfl_samples(self.client, tenant_id)
            if tenant_id in self._ttfl:
                fresh += new_head(self._ttfl[tenant_id], current)
            self._ttfl[tenant_id] = current
        return tuple(fresh)

    def sample(self, now: datetime) -> Sample:
        """Measure everything now."""
        disk: float | None = None
        if self.store_dir.exists():
            usage = shutil.disk_usage(self.store_dir)
            disk = 100.0 * usage.used / usage.total if usage.total else None
        return Sample(
            at=now,
            cores=os.cpu_count() or 1,
            cpu_percent=self._cpu_percent(),
            ram_percent=read_ram_percent(self.proc),
            queue_depth=int(self.client.xlen(redis_keys.INGEST_STREAM)),
            load_avg=os.getloadavg()[0],
            disk_percent=disk,
            ttfl_s=self._new_ttfl(),
        )


def sample_to_json(sample: Sample) -> str:
    """The JSON stored in Redis."""
    return json.dumps(
        {
            "at": sample.at.isoformat(),
            "cores": sample.cores,
            "cpu_percent": sample.cpu_percent,
            "ram_percent": sample.ram_percent,
            "queue_depth": sample.queue_depth,
            "load_avg": sample.load_avg,
            "disk_percent": sample.disk_percent,
            "ttfl_s": list(sample.ttfl_s),
        }
    )


def sample_from_json(raw: str) -> Sample:
    """Inverse of :func:`sample_to_json`."""
    d = json.loads(raw)
    return Sample(
        at=datetime.fromisoformat(d["at"]),
        cores=int(d["cores"]),
        cpu_percent=d.get("cpu_percent"),
        ram_percent=d.get("ram_percent"),
        queue_depth=d.get("queue_depth"),
        load_avg=d.get("load_avg"),
        disk_percent=d.get("disk_percent"),
        ttfl_s=tuple(d.get("ttfl_s", ())),
    )


def store_sample(client: redis.Redis, sample: Sample) -> None:
    """Push one sample (newest first) and trim to :data:`KEEP`."""
    pipe = client.pipeline(transaction=True)
    pipe.lpush(redis_keys.SCALE_SAMPLES, sample_to_json(sample))
    pipe.ltrim(redis_keys.SCALE_SAMPLES, 0, KEEP - 1)
    pipe.execute()


def load_samples(client: redis.Redis) -> list[Sample]:
    """Stored samples, oldest first."""
    raw: list[str] = client.lrange(redis_keys.SCALE_SAMPLES, 0, -1)  # type: ignore[assignment]
    return [sample_from_json(r) for r in reversed(raw)]
