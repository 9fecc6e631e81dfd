"""Degraded modes: Redis down, service down, unreadable payloads — the screen stays up."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime

import redis

from nika_tui.dashboard.fixture_source import FixtureSource
from nika_tui.dashboard.redis_source import RedisDashboardSource
from nika_tui.domain.tenant import TenantConfig
from nika_tui.services import redis_keys as keys
from nika_tui.services.config_store import save_tenant
from nika_tui.settings import Settings
from nika_tui.ui.app import NikaDashboard
from nika_tui.ui.widgets.status_bar import StatusBar
from tests.ui.conftest import SIZE
from tests.ui.pilot_helpers import notes, ready, run, screen_is, wait_for

Build = Callable[..., NikaDashboard]
NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)


def _status(app: NikaDashboard) -> str:
    return str(app.screen.query_one(StatusBar).describe())


def test_redis_down_is_said_and_recovers_by_itself(
    build_app: Build, isolated_env: dict[str, str]
) -> None:
    from nika_tui.paths import roots
    from nika_tui.services.redis_server import ensure_embedded, stop_embedded

    save_tenant(
        TenantConfig(tenant_id="acme", display_name="Acme"), Settings.from_env(isolated_env).roots
    )
    source = RedisDashboardSource(
        Settings.from_env(isolated_env)
    )  # the embedded Redis of this data dir: not started

    async def scenario() -> None:
        app = build_app(source, clock=lambda: NOW)
        app.settings = app.settings.model_copy(update={"refresh_s": 0.2})
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            assert "Redis down" in _status(app) and "nika up" in _status(app)
            assert app.snapshot is not None and app.snapshot.row("acme") is not None
            url = ensure_embedded(roots(isolated_env))
            redis.Redis.from_url(url).hset(keys.kernel_state("acme"), mapping={"state": "idle"})
            await wait_for(pilot, lambda: "Redis ok" in _status(app), "recovery", timeout=15)
            await wait_for(pilot, lambda: app.snapshot.row("acme").kernel.state == "idle", "data")  # type: ignore[union-attr]
            assert "service down" in _status(app)

    try:
        run(scenario())
    finally:
        stop_embedded(roots(isolated_env))


def test_service_down_keeps_screens_up(build_app: Build) -> None:
    source = FixtureSource.from_file()
    source.service_ok = False

    async def scenario() -> None:
        async with build_app(source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            assert "service down" in _status(app)
            await pilot.press("p")  # the purge plan needs the service
            await screen_is(pilot, "PurgeScreen")
            await wait_for(
                pilot, lambda: any("memory service is not running" in n for n in notes(app)), "said"
            )
            await pilot.press("escape")
            await screen_is(pilot, "OverviewScreen")
            await pilot.press("down", "slash")
            await screen_is(pilot, "RecallScreen")
            await pilot.press(*"vat", "enter")
            hits = app.screen.query_one("#recall-hits")
            await wait_for(
                pilot,
                lambda: "recall failed: memory service is not running" in str(hits.render()),
                "recall",
            )

    run(scenario())


def test_unreadable_payloads_show_as_unreadable_rows(
    build_app: Build, isolated_env: dict[str, str], redis_url: str
) -> None:
    env = {**isolated_env, "REDIS_URL": redis_url}
    save_tenant(TenantConfig(tenant_id="bad", display_name="Bad"), Settings.from_env(env).roots)
    r = redis.Redis.from_url(redis_url, decode_responses=True)
    r.hset(keys.kernel_state("bad"), mapping={"state": "\\x00??"})
    r.hset(keys.working_memory("bad"), mapping={"fill_percent": "NaN-ish"})
    r.xadd(keys.debt_history("bad"), {"report": json.dumps({"metrics": "nope"})})
    r.hset(keys.review_queue("bad"), "rv", "{oops")

    async def scenario() -> None:
        async with build_app(
            RedisDashboardSource(Settings.from_env(env)), clock=lambda: NOW
        ).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            table = app.screen.query_one("#tenants")
            row = [str(c) for c in table.get_row("bad")]  # type: ignore[attr-defined]
            assert (
                row[1].endswith("unreadable")
                and row[3].startswith("unreadable")
                and "unreadable" in row[4]
            )
            await pilot.press("v")
            await screen_is(pilot, "ReviewScreen")
            await wait_for(
                pilot,
                lambda: "{oops" in str(app.screen.query_one("#old-side").render()),
                "raw kept",
            )

    run(scenario())


def test_source_crash_is_shown_and_polling_continues(build_app: Build) -> None:
    class Flaky(FixtureSource):
        fail = True

        def snapshot(self, now: datetime):  # type: ignore[no-untyped-def]
            if Flaky.fail:
                raise RuntimeError("boom")
            return super().snapshot(now)

    source = Flaky(FixtureSource.from_file()._data)

    async def scenario() -> None:
        app = build_app(source)
        app.settings = app.settings.model_copy(update={"refresh_s": 0.2})
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(
                pilot,
                lambda: "dashboard source failed: RuntimeError: boom" in _status(app),
                "error shown",
            )
            Flaky.fail = False
            await wait_for(pilot, lambda: app.snapshot is not None, "recovered")
            await wait_for(pilot, lambda: "failed" not in _status(app), "error cleared")

    run(scenario())


def test_dashboard_process_never_imports_torch_or_qdrant(tmp_path: object) -> None:
    code = """
import asyncio, json, sys
from nika_tui.settings import Settings
from nika_tui.ui.app import make_app
from nika_tui.dashboard.redis_source import RedisDashboardSource
from nika_tui.dashboard.fixture_source import FixtureSource
live = make_app(Settings.from_env())  # the real factory with the live source
assert isinstance(live.source, RedisDashboardSource)
src = FixtureSource.from_file()
app = make_app(Settings.from_env(), source=src, clock=lambda: src.now, show_welcome=False)
async def main():
    async with app.run_test(size=(120, 30)) as pilot:
        while app.snapshot is None:
            await pilot.pause(0.02)
        await pilot.pause()
        app.save_screenshot("first.svg", path=sys.argv[1])
asyncio.run(main())
print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))
"""
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(out.stdout.strip().splitlines()[-1]))
    assert "textual" in loaded  # the frame was really rendered
    heavy = {"torch", "sentence_transformers", "qdrant_client", "qdrant_edge", "transformers"}
    assert not (loaded & heavy), loaded & heavy


def test_libtmux_is_loaded_after_the_first_frame_not_before(tmp_path: object) -> None:
    # The first frame does not need the kernel manager (kernel states come from Redis); it
    # is imported once the frame is on screen, in the UI thread, before any key is handled.
    code = """
import asyncio, json, sys
from nika_tui.settings import Settings
from nika_tui.ui.app import make_app
app = make_app(Settings.from_env(), show_welcome=False)
at_start = "libtmux" in sys.modules
seen = {}
display = app._display
def recording(screen, renderable):
    # The first frame handed to the terminal with the overview on screen: is libtmux there?
    display(screen, renderable)
    if renderable is not None and "at_first_frame" not in seen and app.snapshot is not None:
        if type(app.screen).__name__ == "OverviewScreen":
            seen["at_first_frame"] = "libtmux" in sys.modules
app._display = recording
async def main():
    async with app.run_test(size=(120, 30)) as pilot:
        for _ in range(200):
            if "at_first_frame" in seen and "libtmux" in sys.modules:
                break
            await pilot.pause(0.05)
        seen["after"] = "libtmux" in sys.modules
asyncio.run(main())
print(json.dumps({"at_start": at_start, **seen}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"at_start": False, "at_first_frame": False, "after": True}
