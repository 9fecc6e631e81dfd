"""`nika web`: textual-serve answers over HTTP on the local interface."""

from __future__ import annotations

import socket
import subprocess
import sys

import httpx
import pytest

from tests.helpers import retry_until


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_nika_web_serves_the_dashboard_page() -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "nika_tui", "web", "--port", str(port), "--offline-ui"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def page() -> str | None:
            try:
                reply = httpx.get(f"http://127.0.0.1:{port}/", timeout=1.0)
            except httpx.HTTPError:
                return None
            return reply.text if reply.status_code == 200 else None

        html = retry_until(page, timeout=20, what="the textual-serve page")
        assert "nika-os" in html
    finally:
        proc.terminate()
        proc.wait(timeout=10)
