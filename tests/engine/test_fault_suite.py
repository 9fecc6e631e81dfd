"""Fault suite: kill -9 of the service and of Redis mid-ingest, Redis restarted under the
dashboard. The removed shard is ``test_tenant_faults.py``, the corrupt AOF
``tests/cli/test_bad_inputs.py``, a lone service kill -9 ``test_service_crash.py``.

Real processes: ``nika serve``, the embedded ``redis-server`` (this test's own, in its data
dir, since it is killed), Qdrant Edge on disk, the real embedder.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis

from benchmarks.durability import run
from nika_tui.dashboard.redis_source import RedisDashboardSource
from nika_tui.domain.tenant import TenantConfig
from nika_tui.services import redis_keys
from nika_tui.services.config_store import save_tenant
from nika_tui.services.redis_server import embedded_location, ensure_embedded, stop_embedded
from nika_tui.settings import Settings
from tests.helpers import retry_until


@pytest.mark.slow
@pytest.mark.embedder
def test_kill_9_of_service_and_redis_mid_ingest_loses_and_duplicates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    report = run(n=80, kills=4, seed=3, root=tmp_path / "run", alternate=True)
    assert report["kills"] == {"service": 2, "redis": 2}
    assert report["acknowledged"] == 80
    assert (report["lost"], report["duplicated"], report["extra"]) == (0, 0, 0)
    assert report["stored"] == 80 and report["dead_lettered"] == 0


def test_redis_killed_and_restarted_under_the_dashboard(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    save_tenant(TenantConfig(tenant_id="tena", display_name="Tena"))
    ensure_embedded()
    source = RedisDashboardSource(Settings.from_env(), defer_warm_up=True)
    now = datetime.now(UTC)
    try:
        assert source.snapshot(now).redis_ok
        pid = int(embedded_location().pidfile.read_text().strip())
        os.kill(pid, signal.SIGKILL)
        retry_until(lambda: not Path(f"/proc/{pid}").exists(), what="redis to die")
        down = source.snapshot(now)
        assert not down.redis_ok and any("Redis unreachable" in p for p in down.problems)
        assert [r.tenant_id for r in down.tenants] == ["tena"]  # rows stay, marked
        ensure_embedded()
        retry_until(lambda: source.snapshot(now).redis_ok, what="the dashboard to reconnect")
    finally:
        source.close()
        stop_embedded()


def test_the_dashboard_sees_a_killed_service_at_once_and_restarts_it(
    redis_client: redis.Redis,
) -> None:
    started: list[int] = []
    source = RedisDashboardSource(
        Settings.from_env(), defer_warm_up=True, autostart=lambda: started.append(1)
    )
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    beat = {"pid": dead.pid, "host": socket.gethostname()}
    # The heartbeat of a kill -9'd service: still in Redis for up to its TTL.
    redis_client.set(redis_keys.SERVICE_HEARTBEAT, json.dumps(beat), ex=10)
    now = datetime.now(UTC)
    try:
        down = source.snapshot(now)
        assert not down.service_ok
        assert started == [1]
        # Started in the background, and said so on the status bar (issue 17).
        assert any("starting it in the background" in p for p in down.problems)
        source.snapshot(now)
        assert started == [1]  # not again before AUTOSTART_EVERY_S
        beat["pid"] = os.getpid()
        redis_client.set(redis_keys.SERVICE_HEARTBEAT, json.dumps(beat), ex=10)
        assert source.snapshot(now).service_ok
    finally:
        source.close()
