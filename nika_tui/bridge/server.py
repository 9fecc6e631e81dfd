"""``nika bridge serve``: the webhook server (aiohttp) and its delivery threads.

Routes: ``GET|POST /webhooks/whatsapp``, ``POST /webhooks/teams``, ``POST /webhooks/gchat``,
``GET /healthz``. Every POST goes through the same gate, in this order: gateway configured
(404), no ``Origin`` header (403: gateways call server to server, a browser page would send
one), ``Content-Type: application/json`` (415), body size (413, checked on
``Content-Length`` and again while reading), the gateway's proof of origin (401), JSON and
fields (400). A refusal is one log line with its reason and a small JSON answer; nothing is
routed before the proof of origin, and no request can take the process down (a bug answers
500 and is logged with its traceback). Gateways get their 200 as soon as the message is
durably queued; Google Chat waits (at most ``gchat_sync_wait_s``) for the answer, which
goes in the response.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx
import redis
from aiohttp import web

from nika_tui.bridge.delivery import Outbox, Sender
from nika_tui.bridge.gchat import GChatAdapter
from nika_tui.bridge.gchat_api import ChatApi, load_service_account
from nika_tui.bridge.jwt_verify import JwksCache
from nika_tui.bridge.records import record_error
from nika_tui.bridge.router import Outcome, Router
from nika_tui.bridge.settings import BridgeSettings
from nika_tui.bridge.teams import TeamsAdapter
from nika_tui.bridge.webhook import GatewayAdapter, WebhookRequest
from nika_tui.bridge.whatsapp import WhatsAppAdapter
from nika_tui.domain.bridge import Gateway, InboundMessage
from nika_tui.errors import BridgeError, BridgeRefused
from nika_tui.paths import FILE_MODE, Roots, ensure_private_dir
from nika_tui.services import bridge_keys as keys
from nika_tui.settings import Settings

log = logging.getLogger("nika.bridge")
HEARTBEAT_S = 5.0


@dataclass
class SyncWaiters:
    """Answers a gateway takes in the HTTP response (Google Chat), handed across threads."""

    loop: asyncio.AbstractEventLoop | None = None
    pending: dict[tuple[str, str], asyncio.Future[str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def register(self, message: InboundMessage) -> asyncio.Future[str]:
        """A future the outbox resolves with the message's answer."""
        assert self.loop is not None
        future: asyncio.Future[str] = self.loop.create_future()
        with self.lock:
            self.pending[(message.gateway.value, message.message_id)] = future
        return future

    def forget(self, message: InboundMessage) -> None:
        """Nobody waits any more (timed out or answered)."""
        with self.lock:
            self.pending.pop((message.gateway.value, message.message_id), None)

    def resolve(self, message: InboundMessage, text: str) -> bool:
        """Called by the outbox thread: True when a request was waiting and got the answer."""
        with self.lock:
            future = self.pending.pop((message.gateway.value, message.message_id), None)
            if future is None or self.loop is None:
                return False
            self.loop.call_soon_threadsafe(_set_result, future, text)
            return True


def _set_result(future: asyncio.Future[str], text: str) -> None:
    if not future.done():
        future.set_result(text)


def build_adapters(
    settings: BridgeSettings, client: httpx.AsyncClient
) -> dict[Gateway, GatewayAdapter]:
    """The configured gateways' adapters."""
    config, secrets = settings.config, settings.secrets
    refetch = config.key_refetch_min_s
    out: dict[Gateway, GatewayAdapter] = {}
    if settings.gateway_enabled(Gateway.WHATSAPP):
        out[Gateway.WHATSAPP] = WhatsAppAdapter(
            app_secret=secrets["WHATSAPP_APP_SECRET"],
            verify_token=secrets.get("WHATSAPP_VERIFY_TOKEN", ""),
            access_token=secrets.get("WHATSAPP_ACCESS_TOKEN", ""),
            graph_url=config.whatsapp.graph_url,
        )
    if settings.gateway_enabled(Gateway.TEAMS):
        out[Gateway.TEAMS] = TeamsAdapter(
            app_id=config.teams.app_id,
            app_password=secrets.get("MICROSOFT_APP_PASSWORD", ""),
            issuer=config.teams.issuer,
            token_url=config.teams.token_url,
            keys=JwksCache(config.teams.openid_url, client, min_refresh_s=refetch),
        )
    if settings.gateway_enabled(Gateway.GCHAT):
        account = secrets.get("GCHAT_SERVICE_ACCOUNT")
        out[Gateway.GCHAT] = GChatAdapter(
            audience=config.gchat.audience,
            issuer=config.gchat.issuer,
            keys=JwksCache(config.gchat.jwks_url, client, min_refresh_s=refetch),
            api=ChatApi(load_service_account(account), config.gchat.api_url) if account else None,
        )
    return out


class BridgeServer:
    """The aiohttp application and what it drives.

    Args:
        bridge: The bridge's config and secrets (:func:`nika_tui.bridge.settings.resolve`).
        settings: The process's settings, built once by ``nika bridge serve``.
        client: Redis.
        child_env: The environment the kernels it starts inherit (secrets removed).
    """

    def __init__(
        self,
        bridge: BridgeSettings,
        settings: Settings,
        client: redis.Redis,
        child_env: Mapping[str, str],
    ) -> None:
        self.bridge = bridge
        self.settings = settings
        self.config = bridge.config
        self.client = client
        self.roots = settings.roots
        """Where the tenants' buses are."""
        self.http = httpx.AsyncClient(timeout=10.0)
        self.adapters = build_adapters(bridge, self.http)
        self.waiters = SyncWaiters()
        senders: dict[Gateway, Sender] = dict(self.adapters)
        self.outbox = Outbox(client, senders, self.roots, sync_waiters=self.waiters.resolve)
        self.router = Router(self.config, client, settings, child_env, self.outbox)
        self.threads: list[threading.Thread] = []

    def app(self) -> web.Application:
        """The web application (routes and the body limit)."""
        application = web.Application(client_max_size=self.config.max_body_bytes)
        application.router.add_get("/healthz", self.health)
        application.router.add_get("/webhooks/whatsapp", self.whatsapp_handshake)
        application.router.add_post("/webhooks/{gateway}", self.webhook)
        return application

    async def health(self, _request: web.Request) -> web.Response:
        """Liveness, and which gateways are served."""
        return web.json_response({"ok": True, "gateways": sorted(g.value for g in self.adapters)})

    def refuse(self, request: web.Request, gateway: str, exc: BridgeRefused) -> web.Response:
        """Log one refusal with its reason; answer it."""
        log.warning("refused %s %s: %d %s", request.method, request.path, exc.status, exc.message)
        try:
            record_error(self.client, self.roots, None, gateway, f"{exc.status} {exc.message}",
                         datetime.now(UTC), path=request.path)  # fmt: skip
        except redis.RedisError:
            log.exception("could not record the refusal")
        return web.json_response({"error": exc.message}, status=exc.status)

    async def whatsapp_handshake(self, request: web.Request) -> web.Response:
        """Meta's subscription handshake."""
        adapter = self.adapters.get(Gateway.WHATSAPP)
        try:
            if not isinstance(adapter, WhatsAppAdapter):
                raise BridgeRefused(404, "gateway whatsapp is not configured")
            if request.headers.get("Origin"):
                raise BridgeRefused(403, "requests from a browser page are refused")
            challenge = adapter.handshake(dict(request.query))
        except BridgeRefused as exc:
            return self.refuse(request, "whatsapp", exc)
        log.info("whatsapp verification handshake answered")
        return web.Response(text=challenge, content_type="text/plain")

    async def webhook(self, request: web.Request) -> web.Response:
        """The gate every POST goes through, then routing."""
        name = request.match_info["gateway"]
        try:
            return await self._webhook(request, name)
        except BridgeRefused as exc:
            return self.refuse(request, name, exc)
        except Exception:
            log.exception("webhook %s failed", request.path)
            return web.json_response({"error": "internal error"}, status=500)

    async def _webhook(self, request: web.Request, name: str) -> web.Response:
        try:
            gateway = Gateway(name)
        except ValueError:
            raise BridgeRefused(404, f"no gateway {name!r}") from None
        adapter = self.adapters.get(gateway)
        if adapter is None:
            raise BridgeRefused(404, f"gateway {name} is not configured")
        if request.headers.get("Origin"):
            # Gateways call server to server and send no Origin; a browser page does.
            origin = request.headers["Origin"][:100]
            raise BridgeRefused(403, f"requests from a browser page ({origin!r}) are refused")
        if request.content_type != "application/json":
            raise BridgeRefused(415, f"content type {request.content_type!r} is not JSON")
        limit = self.config.max_body_bytes
        if request.content_length is not None and request.content_length > limit:
            raise BridgeRefused(413, f"body of {request.content_length} bytes is over {limit}")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise BridgeRefused(413, f"body is over {limit} bytes") from None
        raw = WebhookRequest(request.method, {k.lower(): v for k, v in request.headers.items()},
                             dict(request.query), body)  # fmt: skip
        verified = await adapter.verify(raw)
        messages = adapter.parse(verified)
        answers: list[asyncio.Future[str]] = []
        for message in messages:
            waiting = gateway is Gateway.GCHAT and self.config.gchat_sync_wait_s > 0
            future = self.waiters.register(message) if waiting else None
            outcome, tenant = await asyncio.to_thread(self.router.take, message)
            log.info("%s message %s from %s: %s%s", gateway.value, message.message_id[:60],
                     message.sender, outcome.value, f" → {tenant}" if tenant else "")  # fmt: skip
            if future is not None:
                if outcome is Outcome.DUPLICATE:
                    self.waiters.forget(message)
                else:
                    answers.append(future)
        if gateway is Gateway.GCHAT:
            return await self._gchat_answer(messages, answers)
        return web.json_response({"ok": True})

    async def _gchat_answer(
        self, messages: list[InboundMessage], answers: list[asyncio.Future[str]]
    ) -> web.Response:
        if not answers:
            return web.json_response({})
        try:
            text = await asyncio.wait_for(answers[0], self.config.gchat_sync_wait_s)
        except TimeoutError:
            for message in messages:
                self.waiters.forget(message)
            return web.json_response({})
        return web.json_response({"text": text})

    # --- lifecycle ------------------------------------------------------------------------------
    def start_threads(self) -> None:
        """The outbox, the workers of tenants with pending messages, the heartbeat."""
        outbox = threading.Thread(target=self.outbox.run, name="bridge-outbox", daemon=True)
        outbox.start()
        self.threads.append(outbox)
        self.router.resume_pending()

    def heartbeat(self, url: str) -> None:
        """Publish that the server runs (read by ``nika bridge status`` and the dashboard)."""
        gateways = {g.value: self.bridge.missing(g) for g in Gateway}
        served = sorted(g.value for g in self.adapters)
        pipe = self.client.pipeline()
        pipe.hset(keys.SERVER, mapping={"pid": str(os.getpid()), "url": url,
                  "gateways": json.dumps(served), "missing": json.dumps(gateways),
                  "beat_at": datetime.now(UTC).isoformat()})  # fmt: skip
        pipe.set(keys.SERVER_HEARTBEAT, str(os.getpid()), ex=int(HEARTBEAT_S * 3))
        pipe.execute()

    def stop(self) -> None:
        """Stop the threads (pending messages stay in Redis for the next start)."""
        self.outbox.stop.set()
        self.outbox.wake.set()
        self.router.stop()
        for thread in self.threads:
            thread.join(timeout=3)
        self.client.delete(keys.SERVER_HEARTBEAT)


def setup_logging(where: Roots) -> None:
    """Log lines to stderr and to ``{data}/logs/bridge.log`` (0600)."""
    path = ensure_private_dir(where.data / "logs") / "bridge.log"
    path.touch(mode=FILE_MODE, exist_ok=True)
    os.chmod(path, FILE_MODE)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(message)s")
    for handler in (logging.StreamHandler(), logging.FileHandler(path, encoding="utf-8")):
        handler.setFormatter(fmt)
        log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


async def serve(
    bridge: BridgeSettings,
    settings: Settings,
    client: redis.Redis,
    child_env: Mapping[str, str],
    host: str,
    port: int,
) -> None:
    """Run until SIGINT / SIGTERM; prints ``listening on URL`` once the socket is bound."""
    server = BridgeServer(bridge, settings, client, child_env)
    server.waiters.loop = asyncio.get_running_loop()
    runner = web.AppRunner(server.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise BridgeError(
            f"cannot listen on {host}:{port} ({exc.strerror})", "choose another --port"
        ) from exc
    bound = port
    for address in runner.addresses:
        bound = int(address[1])
        break
    url = f"http://{host}:{bound}"
    server.start_threads()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    served = ", ".join(sorted(g.value for g in server.adapters)) or "none configured"
    print(f"nika bridge listening on {url} (gateways: {served})", flush=True)
    log.info("listening on %s (gateways: %s)", url, served)
    try:
        while not stop.is_set():
            await asyncio.to_thread(server.heartbeat, url)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), HEARTBEAT_S)
    finally:
        log.info("stopping")
        await asyncio.to_thread(server.stop)
        await server.http.aclose()
        await runner.cleanup()


def serve_forever(
    bridge: BridgeSettings,
    settings: Settings,
    client: redis.Redis,
    child_env: Mapping[str, str],
    host: str,
    port: int,
) -> None:
    """Blocking entry point of ``nika bridge serve`` (arguments as :class:`BridgeServer`'s)."""
    setup_logging(settings.roots)
    asyncio.run(serve(bridge, settings, client, child_env, host, port))
