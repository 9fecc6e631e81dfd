"""``nika web`` behind its token and Origin check, driven by a real HTTP + WebSocket client.

The server is the real ``nika web --offline-ui --port 0`` process; the client is aiohttp.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import retry_until

URL_LINE = re.compile(r"open (http://\S+)/\?token=(\S+)")


class WebProcess:
    """A running ``nika web`` and what it printed."""

    def __init__(self, proc: subprocess.Popen[str], base: str, token: str, err: Path) -> None:
        self.proc = proc
        self.base = base
        self.token = token
        self.err = err

    @property
    def port(self) -> int:
        return int(self.base.rsplit(":", 1)[1])


def _start(tmp_path: Path, *extra: str) -> WebProcess:
    out_path, err_path = tmp_path / "web.out", tmp_path / "web.err"
    with out_path.open("w") as out, err_path.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "nika_tui", "web", "--offline-ui", "--port", "0", *extra],
            stdout=out,
            stderr=err,
            text=True,
            env={**os.environ, "NIKA_NO_AUTOSTART": "1"},
        )
    match = retry_until(
        lambda: URL_LINE.search(out_path.read_text()), timeout=30, what="the printed URL"
    )
    return WebProcess(proc, match.group(1), match.group(2), err_path)


@pytest.fixture
def web(tmp_path: Path) -> Iterator[WebProcess]:
    server = _start(tmp_path)
    yield server
    server.proc.terminate()
    server.proc.wait(timeout=20)


async def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    import aiohttp  # imported by the tests that talk to the server, not at collection

    async with (
        aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as session,
        session.get(url, allow_redirects=False, headers=headers) as resp,
    ):
        return resp.status, dict(resp.headers), await resp.text()


async def _ws(url: str, origin: str | None, cookie: str | None) -> int | str:
    """Open the WebSocket; the handshake's HTTP status on refusal, else the first frame kind."""
    import aiohttp

    headers = {"Origin": origin} if origin else {}
    if cookie:
        headers["Cookie"] = cookie
    async with aiohttp.ClientSession() as session:
        try:
            async with session.ws_connect(url, headers=headers) as ws:
                msg = await ws.receive(timeout=60)
                return msg.type.name
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status


def test_page_needs_the_printed_token(web: WebProcess) -> None:
    status, _, body = asyncio.run(_get(web.base + "/"))
    assert status == 401 and "token" in body
    status, _, _ = asyncio.run(_get(web.base + "/?token=wrong" + web.token[5:]))
    assert status == 401
    status, _, _ = asyncio.run(_get(web.base + "/static/js/textual.js"))
    assert status == 401


def test_first_load_sets_a_strict_httponly_cookie_then_the_page_loads(web: WebProcess) -> None:
    status, headers, _ = asyncio.run(_get(f"{web.base}/?token={web.token}"))
    assert status == 302 and headers["Location"] == "/"
    cookie = headers["Set-Cookie"]
    assert f"nika_web_{web.port}={web.token}" in cookie
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    status, _, body = asyncio.run(
        _get(web.base + "/", headers={"Cookie": f"nika_web_{web.port}={web.token}"})
    )
    assert status == 200 and "/ws" in body


def test_websocket_refuses_a_foreign_origin_even_with_the_token(web: WebProcess) -> None:
    cookie = f"nika_web_{web.port}={web.token}"
    assert asyncio.run(_ws(web.base + "/ws", "http://evil.example", cookie)) == 403
    # Same origin but no token: refused too.
    assert asyncio.run(_ws(web.base + "/ws", web.base, None)) == 401
    assert asyncio.run(_ws(web.base + "/ws", web.base, f"nika_web_{web.port}=nope")) == 401


def test_websocket_with_own_origin_and_cookie_drives_the_dashboard(web: WebProcess) -> None:
    cookie = f"nika_web_{web.port}={web.token}"
    kind = asyncio.run(_ws(web.base + "/ws?width=80&height=24", web.base, cookie))
    assert kind in {"BINARY", "TEXT"}


def test_rebinding_host_header_is_refused_on_loopback(web: WebProcess) -> None:
    status, _, _ = asyncio.run(
        _get(f"{web.base}/?token={web.token}", headers={"Host": f"evil.example:{web.port}"})
    )
    assert status == 403


def test_non_loopback_host_warns_and_still_needs_the_token(tmp_path: Path) -> None:
    server = _start(tmp_path, "--host", "0.0.0.0")
    try:
        assert "warning: nika web listens on 0.0.0.0" in server.err.read_text()
        local = f"http://127.0.0.1:{server.port}"
        assert asyncio.run(_get(local + "/"))[0] == 401
        assert asyncio.run(_get(f"{local}/?token={server.token}"))[0] == 302
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=20)
