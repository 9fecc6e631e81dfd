"""`nika web`: textual-serve answers over HTTP on the local interface, to the printed URL.

Token, Origin and Host checks: ``tests/ui/test_web_auth.py``."""

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
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split("open ", 1)[1].strip()  # carries the token
        assert url.startswith(f"http://127.0.0.1:{port}/?token=")

        def page() -> str | None:
            try:
                reply = httpx.get(url, timeout=1.0, follow_redirects=True)
            except httpx.HTTPError:
                return None
            return reply.text if reply.status_code == 200 else None

        html = retry_until(page, timeout=20, what="the textual-serve page")
        assert "nika-os" in html
    finally:
        proc.terminate()
        proc.wait(timeout=10)
