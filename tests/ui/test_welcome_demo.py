"""The welcome screen's demo button, end to end: it runs the real ``nika demo``, which creates
the demo tenant, starts the memory service and spawns the demo kernel on the test's private tmux
socket; the welcome closes and the overview shows the demo tenant's row."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from nika_tui.dashboard.redis_reads import kernel_session
from nika_tui.dashboard.redis_source import RedisDashboardSource
from nika_tui.demo import DEMO_DISPLAY_NAME, DEMO_TENANT_ID
from nika_tui.services.config_store import load_tenant
from nika_tui.services.memory_client import MemoryClient
from nika_tui.settings import Settings
from nika_tui.ui.app import make_app
from tests.ui.conftest import SIZE
from tests.ui.pilot_helpers import run, screen_is, wait_for

if TYPE_CHECKING:  # libtmux is imported by the tmux fixture at use (issue 12)
    import libtmux


@pytest.mark.slow
@pytest.mark.tmux
@pytest.mark.embedder  # the service `nika demo` starts loads the embedder (in its own process)
def test_demo_button_starts_the_demo_tenant_service_and_kernel(
    isolated_env: dict[str, str], tmux_server: libtmux.Server, tmp_path: Path
) -> None:
    # No tenant and no Redis yet: a first run. The factory decides to show the welcome.
    app = make_app(
        Settings.from_env(isolated_env),
        source=RedisDashboardSource(Settings.from_env(isolated_env), child_env=isolated_env),
        settings_file=tmp_path / "ui",
    )
    assert app.options.show_welcome is True
    app.settings = app.settings.model_copy(update={"refresh_s": 0.2})

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await screen_is(pilot, "WelcomeScreen")
            await pilot.click("#demo")  # headless, `nika demo` runs without a terminal
            await screen_is(pilot, "OverviewScreen")

            def demo_row() -> bool:
                snap = app.snapshot
                row = snap.row(DEMO_TENANT_ID) if snap is not None else None
                return row is not None and snap is not None and snap.redis_ok and snap.service_ok

            await wait_for(pilot, demo_row, "the demo row with Redis and the service up", 30)
            table = app.screen.query_one("#tenants")
            cells = [str(c) for c in table.get_row(DEMO_TENANT_ID)]  # type: ignore[attr-defined]
            assert cells[0] == DEMO_TENANT_ID and cells[-1] == "claude-code"

    try:
        run(scenario())
        config = load_tenant(DEMO_TENANT_ID, Settings.from_env(isolated_env).roots)
        assert config.demo is True and config.display_name == DEMO_DISPLAY_NAME
        assert tmux_server.has_session(kernel_session(DEMO_TENANT_ID))  # the replay kernel
        assert tmux_server.has_session("nika-core")  # the memory service `nika demo` started
        assert MemoryClient.open(Settings.from_env(isolated_env)).service_alive()
    finally:
        subprocess.run(
            [sys.executable, "-m", "nika_tui", "down", "--redis"], capture_output=True, timeout=60
        )
