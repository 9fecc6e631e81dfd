"""``nika web``: the dashboard over textual-serve, behind a per-launch token and an Origin check.

textual-serve alone has no login: any page open in the person's browser could open its
WebSocket and drive the dashboard (read every tenant's screen, purge, approve, attach to a
kernel's shell). Three defences, all in this module:

- **Token**: each launch draws a random token (``secrets.token_urlsafe(32)``) and prints the
  URL carrying it, on stdout only (never on a command line, in a file or a log). The first
  load with ``?token=`` sets an HttpOnly, ``SameSite=Strict`` cookie and redirects to the bare
  URL (the token leaves the address bar and the history); every route — page, WebSocket,
  downloads, static files — then needs that cookie (or the token in the query). Compared in
  constant time.
- **Origin**: a browser always sends ``Origin`` on a WebSocket handshake; one that is not this
  server's own origin is refused (403) before the dashboard process is started, token or not.
- **Loopback**: the default interface is 127.0.0.1. Another ``--host`` is served with a warning
  on stderr, and still with the token and the Origin check. The ``Host`` header must name this
  server (loopback names when bound to loopback), which closes DNS rebinding.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import TextIO

from aiohttp import web
from textual_serve.server import Server

TOKEN_PARAM = "token"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def is_loopback(host: str) -> bool:
    """True when ``host`` names only this machine (127.0.0.0/8, ::1 or ``localhost``)."""
    if host.strip("[]") in {"localhost", "::1"}:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def cookie_name(port: int) -> str:
    """The session cookie's name; cookies ignore ports, so two launches must not share one."""
    return f"nika_web_{port}"


def _host_name(host_header: str) -> str:
    """The host part of a ``Host`` header (``[::1]:8000`` → ``::1``)."""
    if host_header.startswith("["):
        return host_header[1 : host_header.find("]")] if "]" in host_header else host_header
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


class TokenServer(Server):
    """textual-serve's server with the token, Origin and Host checks of the module docstring."""

    def __init__(self, command: str, host: str, port: int, token: str | None = None) -> None:
        super().__init__(command, host=host, port=port, title="nika-os")
        self.token = token or secrets.token_urlsafe(32)
        self.loopback = is_loopback(host)

    # --- checks ---------------------------------------------------------------------------
    def _token_ok(self, request: web.Request) -> bool:
        given = request.query.get(TOKEN_PARAM) or request.cookies.get(cookie_name(self.port), "")
        return hmac.compare_digest(given.encode(), self.token.encode())

    def _host_ok(self, request: web.Request) -> bool:
        name = _host_name(request.host or "")
        if self.loopback:
            return name in LOOPBACK_NAMES or is_loopback(name)
        return True  # bound elsewhere on purpose: the token is what guards it

    def _origin_ok(self, request: web.Request) -> bool:
        origin = request.headers.get("Origin")
        if origin is None:
            return True  # not a browser (browsers always send Origin on a WebSocket)
        return origin in {f"http://{request.host}", f"https://{request.host}"}

    @web.middleware
    async def guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Refuse a foreign Host, a foreign Origin, or a missing or wrong token."""
        if not self._host_ok(request):
            raise web.HTTPForbidden(text="nika web: unexpected Host header\n")
        if request.path == "/ws" and not self._origin_ok(request):
            raise web.HTTPForbidden(text="nika web: cross-origin WebSocket refused\n")
        if not self._token_ok(request):
            raise web.HTTPUnauthorized(
                text="nika web: open the URL with the token that `nika web` printed\n"
            )
        if request.path == "/" and TOKEN_PARAM in request.query:
            # First load: move the token into a cookie and out of the address bar.
            login = web.Response(status=302, headers={"Location": "/"})
            login.set_cookie(
                cookie_name(self.port),
                self.token,
                httponly=True,
                samesite="Strict",
                path="/",
                secure=request.secure,
            )
            return login
        response = await handler(request)
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        response.headers.setdefault("X-Frame-Options", "DENY")
        return response

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self.guard)
        return app

    async def on_startup(self, app: web.Application) -> None:
        """Print the URL with the token (textual-serve's banner would print it bare)."""

    # --- serving --------------------------------------------------------------------------
    def bind(self) -> socket.socket:
        """Bind the listening socket now, so port 0 resolves before the URL is printed."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host.strip("[]"), self.port))
        sock.listen(128)  # connections wait in the backlog until the app runs
        self.port = int(sock.getsockname()[1])
        shown = f"[{self.host}]" if ":" in self.host else self.host
        self.public_url = f"http://{shown}:{self.port}"
        return sock

    def login_url(self) -> str:
        """The URL to open once (it carries the token)."""
        return f"{self.public_url}/?{TOKEN_PARAM}={self.token}"

    def run(self, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> None:
        """Bind, print the login URL (and the warning off loopback), serve until SIGINT/TERM."""
        import asyncio
        import signal

        sock = self.bind()
        if not self.loopback:
            print(
                f"warning: nika web listens on {self.host}, beyond this machine; anyone who "
                "can reach it still needs the token — prefer loopback and an SSH tunnel",
                file=err,
                flush=True,
            )
        print(f"nika web: open {self.login_url()}", file=out, flush=True)
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self.request_exit)
        web.run_app(
            self._make_app(), sock=sock, handle_signals=False, loop=loop, print=lambda *a: None
        )
