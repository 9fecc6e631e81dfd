"""``nika`` (no command), ``nika dashboard`` and ``nika web``: the Textual console.

Textual and textual-serve are imported inside the handlers: ``nika --help`` and the hooks stay
fast, and nothing here pulls torch or qdrant into the dashboard process.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from functools import partial
from typing import TYPE_CHECKING, Any

from nika_tui.cli.common import add_json_flag, settings_of
from nika_tui.errors import NikaError

if TYPE_CHECKING:
    from nika_tui.settings import Settings


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """``nika dashboard [--offline-ui]`` and ``nika web [--host H --port P]``."""
    dash = sub.add_parser("dashboard", help="the Textual dashboard (also what `nika` opens)")
    dash.add_argument(
        "--offline-ui",
        action="store_true",
        help="preview with the bundled sample data (no Redis, no service)",
    )
    dash.add_argument(
        "--fixture", default=None, help="YAML fixture file for --offline-ui (default: bundled)"
    )
    dash.add_argument("--welcome", action="store_true", help="open on the welcome screen")
    add_json_flag(dash)
    dash.set_defaults(handler=run_dashboard)

    web = sub.add_parser("web", help="serve the dashboard in a browser (textual-serve)")
    web.add_argument(
        "--host",
        default="127.0.0.1",
        help="interface to listen on (default loopback; others get a warning, token still needed)",
    )
    web.add_argument("--port", type=int, default=8000, help="TCP port (0: any free port)")
    web.add_argument("--offline-ui", action="store_true", help="serve the sample-data preview")
    add_json_flag(web)
    web.set_defaults(handler=run_web)


def default_entry(args: argparse.Namespace) -> int:
    """``nika`` with no command: the dashboard (a welcome screen when no tenant exists)."""
    plain = argparse.Namespace(offline_ui=False, fixture=None, welcome=False)
    plain.settings = settings_of(args)  # built once, by run_handler
    return run_dashboard(plain)


def _start_service_in_background(settings: Settings) -> None:
    """Start the memory service (``nika up``) when it is absent, without waiting for it.

    DESIGN: the dashboard starts the service when absent. It runs detached in the tmux session
    ``nika-core``, so the dashboard's first frame never waits for the embedder to load, and
    the status bar turns green by itself once the heartbeat appears.
    ``NIKA_NO_AUTOSTART=1`` turns this off.
    """
    import subprocess

    from nika_tui.services.memory_client import MemoryClient

    if settings.no_autostart:
        return
    if MemoryClient.open(settings, start_redis=False).service_alive():
        return
    subprocess.Popen(
        [sys.executable, "-m", "nika_tui", "up"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def announce_background_start(settings: Settings) -> None:
    """Say on the terminal what opening the dashboard starts, before it does.

    Silent when there is nothing to start (Redis and the service both answer) or when
    ``NIKA_NO_AUTOSTART=1`` (then only Redis is started, and the line says so).
    """
    from nika_tui.services.memory_client import MemoryClient

    try:
        if MemoryClient.open(settings, start_redis=False).service_alive():
            return
    except NikaError:
        pass  # Redis is down: it is started below, and the service too
    if settings.no_autostart:
        print(
            "nika: starting the embedded Redis (NIKA_NO_AUTOSTART=1: not the service)",
            file=sys.stderr,
        )
        return
    print(
        "nika: starting Redis and the memory service in the background (tmux session "
        "nika-core); they keep running after you quit: `nika down` stops the service, "
        "`nika down --redis` Redis too; NIKA_NO_AUTOSTART=1 does not start the service",
        file=sys.stderr,
    )


def run_dashboard(args: argparse.Namespace) -> int:
    """Run the dashboard in this terminal until the person quits."""
    from pathlib import Path

    from nika_tui.ui.app import make_app

    settings = settings_of(args)
    if args.offline_ui:
        from nika_tui.dashboard.fixture_source import DEMO_SNAPSHOT, FixtureSource

        path = Path(args.fixture) if args.fixture else DEMO_SNAPSHOT
        fixture = FixtureSource.from_file(path, preview=True)
        app = make_app(
            settings,
            source=fixture,
            clock=lambda: fixture.now,
            show_welcome=args.welcome,
            preview=True,
        )
    else:
        from nika_tui.errors import StoreUnavailable
        from nika_tui.services.redis_server import redis_url

        try:
            # The embedded Redis is a detached daemon: start it once so the first poll has data.
            # Said before it happens (issue 17): both outlive the dashboard.
            announce_background_start(settings)
            redis_url(settings, start=True)
            _start_service_in_background(settings)
        except StoreUnavailable as exc:
            # The dashboard still opens: its status bar says Redis is down and it keeps retrying.
            print(f"warning: {exc}", file=sys.stderr)
        # A service that dies while the dashboard runs is restarted too (pid liveness).
        autostart = (
            None if settings.no_autostart else partial(_start_service_in_background, settings)
        )
        app = make_app(settings, show_welcome=True if args.welcome else None, autostart=autostart)
    app.run()
    return 0


def run_web(args: argparse.Namespace) -> int:
    """Serve the dashboard over HTTP (each browser tab runs one dashboard).

    A per-launch token, an Origin check and loopback by default (:mod:`nika_tui.ui.web_server`).
    """
    from nika_tui.errors import NikaError
    from nika_tui.ui.web_server import TokenServer

    command = [sys.executable, "-m", "nika_tui", "dashboard"]
    if args.offline_ui:
        command.append("--offline-ui")
    server = TokenServer(shlex.join(command), host=args.host, port=args.port)
    try:
        server.run()
    except OSError as exc:
        raise NikaError(
            f"nika web cannot listen on {args.host}:{args.port}: {exc.strerror or exc}",
            "pick another --port (0 chooses a free one) or stop what holds it",
        ) from exc
    return 0
