"""Microsoft Teams through the Bot Framework: JWT-verified activities, replies to serviceUrl.

Inbound: ``Authorization: Bearer JWT`` signed by a key of the Bot Framework's OpenID metadata
(issuer ``https://api.botframework.com``, audience the bot's App ID, not expired, signing key
endorsing the activity's channel); when the token carries ``serviceurl`` it must equal the
activity's ``serviceUrl`` — replies go there, so an unsigned service URL is never trusted.
Only ``message`` activities with text are routed; ``<at>…</at>`` mentions of the bot are cut.

Outbound: a client-credentials token from ``token_url`` (App ID + password, scope
``https://api.botframework.com/.default``; cached until a minute before it expires), then
``POST {serviceUrl}/v3/conversations/{conversation}/activities/{activity id}``.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

from nika_tui.bridge.jwt_verify import JwksCache, verify_bearer
from nika_tui.bridge.webhook import (
    Verified,
    WebhookRequest,
    as_dict,
    as_str,
    chunks,
    failed,
    parse_json,
    unreachable,
)
from nika_tui.domain.bridge import Gateway, InboundMessage, SenderInvalid, normalize_sender
from nika_tui.errors import BridgeRefused

SCOPE = "https://api.botframework.com/.default"
MAX_TEXT = 28_000
_MENTION = re.compile(r"<at>[^<]*</at>", re.IGNORECASE)


@dataclass
class TeamsAdapter:
    """The Teams gateway."""

    app_id: str
    app_password: str
    issuer: str
    token_url: str
    keys: JwksCache
    gateway: Gateway = Gateway.TEAMS
    _token: tuple[str, float] = ("", 0.0)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    async def verify(self, request: WebhookRequest) -> Verified:
        """Check the bearer JWT, then the activity's channel and service URL against it."""
        # The token is checked before a malformed body is reported: an unsigned caller learns
        # nothing. The body is only peeked at for the channel the signing key must endorse.
        try:
            payload: dict[str, Any] | None = parse_json(request.body)
        except BridgeRefused:
            payload = None
        channel = (payload or {}).get("channelId")
        claims = await verify_bearer(
            request.headers.get("authorization"), self.keys, audience=self.app_id,
            issuers=[self.issuer], endorsement=channel if isinstance(channel, str) else None,
        )  # fmt: skip
        if payload is None:
            payload = parse_json(request.body)
        signed_url = claims.get("serviceurl")
        if signed_url is not None and signed_url != payload.get("serviceUrl"):
            raise BridgeRefused(401, "activity serviceUrl differs from the token's serviceurl")
        return Verified(payload, claims)

    def parse(self, verified: Verified) -> list[InboundMessage]:
        """The activity as one message, or none when it is not a text message."""
        activity = verified.payload
        if activity.get("type") != "message":
            return []
        text = _MENTION.sub("", str(activity.get("text") or "")).strip()
        if not text:
            return []
        sender = as_dict(activity.get("from"), "from")
        conversation = as_dict(activity.get("conversation"), "conversation")
        recipient = activity.get("recipient")
        recipient = recipient if isinstance(recipient, dict) else {}
        try:
            sender_id = normalize_sender(Gateway.TEAMS, as_str(sender.get("id"), "from.id"))
        except SenderInvalid as exc:
            raise BridgeRefused(400, f"from.id: {exc}") from exc
        stamp = activity.get("timestamp")
        sent = None
        if isinstance(stamp, str):
            try:
                sent = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
            except ValueError:
                sent = None
        reply_to = {
            "service_url": as_str(activity.get("serviceUrl"), "serviceUrl", 2048),
            "bot_id": str(recipient.get("id") or ""),
            "bot_name": str(recipient.get("name") or ""),
            "aad_object_id": str(sender.get("aadObjectId") or ""),
        }
        return [
            InboundMessage(
                gateway=Gateway.TEAMS,
                message_id=as_str(activity.get("id"), "id", 512),
                sender=sender_id,
                conversation=as_str(conversation.get("id"), "conversation.id", 1024),
                text=text,
                sent_at=sent,
                reply_to=reply_to,
            )
        ]

    def _bearer(self, http: httpx.Client) -> str:
        with self._lock:
            token, expires = self._token
            if token and time.monotonic() < expires:
                return token
            form = {"grant_type": "client_credentials", "client_id": self.app_id,
                    "client_secret": self.app_password, "scope": SCOPE}  # fmt: skip
            try:
                response = http.post(self.token_url, data=form)
            except httpx.HTTPError as exc:
                raise unreachable(exc, "Bot Framework token endpoint") from exc
            if response.status_code != 200:
                raise failed(response, "Bot Framework token endpoint")
            data: dict[str, Any] = response.json()
            token = str(data.get("access_token") or "")
            life = float(data.get("expires_in") or 3600)
            self._token = (token, time.monotonic() + max(0.0, life - 60))
            return token

    def send(self, http: httpx.Client, message: InboundMessage, text: str) -> None:
        """Reply in the conversation, to the activity."""
        base = message.reply_to.get("service_url", "").rstrip("/")
        url = (
            f"{base}/v3/conversations/{quote(message.conversation, safe='')}"
            f"/activities/{quote(message.message_id, safe='')}"
        )
        for part in chunks(text, MAX_TEXT):
            activity = {
                "type": "message",
                "text": part,
                "replyToId": message.message_id,
                "conversation": {"id": message.conversation},
                "from": {"id": message.reply_to.get("bot_id", ""),
                         "name": message.reply_to.get("bot_name", "")},
                "recipient": {"id": message.sender},
            }  # fmt: skip
            headers = {"Authorization": f"Bearer {self._bearer(http)}"}
            try:
                response = http.post(url, json=activity, headers=headers)
            except httpx.HTTPError as exc:
                raise unreachable(exc, "Bot Framework connector") from exc
            if response.status_code == 401:
                self._token = ("", 0.0)  # a revoked token: fetch a new one on the retry
            if response.status_code // 100 != 2:
                raise failed(response, "Bot Framework connector")
