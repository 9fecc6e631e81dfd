"""The embedded Redis starts detached, is reused, persists with AOF, and stops."""

from __future__ import annotations

import stat

from nika_tui.services.redis_server import (
    connect,
    embedded_location,
    ensure_embedded,
    stop_embedded,
)
from nika_tui.settings import Settings


def test_embedded_server_starts_is_reused_and_persists(isolated_env: dict[str, str]) -> None:
    url = ensure_embedded()
    loc = embedded_location()
    assert stat.S_IMODE(loc.root.stat().st_mode) == 0o700
    pid = loc.pidfile.read_text().strip()
    client = connect(Settings.from_env())
    client.set("k", "v")
    assert ensure_embedded() == url
    assert loc.pidfile.read_text().strip() == pid  # reused, not restarted
    assert stop_embedded()
    ensure_embedded()
    assert connect(Settings.from_env()).get("k") == "v"  # AOF brought it back
    assert stop_embedded()
    assert not stop_embedded()
