"""Google Chat (an HTTP-endpoint Chat app): JWT-verified events, the answer in the response.

Inbound: ``Authorization: Bearer JWT`` signed by Chat's service account
(``chat@system.gserviceaccount.com``: issuer, keys from its JWKS), audience the app's Cloud
project number, not expired. ``MESSAGE`` events are routed (``message.name`` is the id,
``message.sender.name`` — ``users/…`` — the sender, ``space.name`` the conversation; the
``argumentText`` without the @mention when present). Other events are answered with ``{}``.

Outbound: Chat takes the answer as the HTTP response of the event (``{"text": …}``) when it
comes within Chat's 30-second limit; the server waits ``gchat_sync_wait_s`` for it. An answer
that comes later is posted through the Chat REST API as the app's service account
(:mod:`nika_tui.bridge.gchat_api`); without ``GCHAT_SERVICE_ACCOUNT`` it is kept in the dead
stream with that reason, never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import httpx

from nika_tui.bridge.delivery import DeliveryFailed
from nika_tui.bridge.gchat_api import ChatApi
from nika_tui.bridge.jwt_verify import JwksCache, verify_bearer
from nika_tui.bridge.webhook import Verified, WebhookRequest, as_dict, as_str, parse_json
from nika_tui.domain.bridge import Gateway, InboundMessage, SenderInvalid, normalize_sender
from nika_tui.errors import BridgeRefused

MAX_TEXT = 4096


@dataclass
class GChatAdapter:
    """The Google Chat gateway."""

    audience: str
    issuer: str
    keys: JwksCache
    api: ChatApi | None = None
    gateway: Gateway = Gateway.GCHAT

    async def verify(self, request: WebhookRequest) -> Verified:
        """Check the bearer JWT, then parse the event."""
        claims = await verify_bearer(
            request.headers.get("authorization"), self.keys, audience=self.audience,
            issuers=[self.issuer],
        )  # fmt: skip
        return Verified(parse_json(request.body), claims)

    def parse(self, verified: Verified) -> list[InboundMessage]:
        """A ``MESSAGE`` event as one message; other events as none."""
        event = verified.payload
        if event.get("type") != "MESSAGE":
            return []
        message = as_dict(event.get("message"), "message")
        sender = as_dict(message.get("sender"), "message.sender")
        if sender.get("type") == "BOT":
            return []
        space = as_dict(message.get("space") or event.get("space"), "space")
        text = message.get("argumentText") or message.get("text")
        text = as_str(text, "message.text", 64 * 1024).strip()
        if not text:
            return []
        try:
            sender_id = normalize_sender(Gateway.GCHAT, as_str(sender.get("name"), "sender.name"))
        except SenderInvalid as exc:
            raise BridgeRefused(400, f"message.sender.name: {exc}") from exc
        stamp = event.get("eventTime") or message.get("createTime")
        sent = None
        if isinstance(stamp, str):
            try:
                sent = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
            except ValueError:
                sent = None
        thread = message.get("thread")
        thread = thread if isinstance(thread, dict) else {}
        return [
            InboundMessage(
                gateway=Gateway.GCHAT,
                message_id=as_str(message.get("name"), "message.name", 512),
                sender=sender_id,
                conversation=as_str(space.get("name"), "space.name", 512),
                text=text,
                sent_at=sent,
                reply_to={
                    "thread": str(thread.get("name") or ""),
                    "email": str(sender.get("email") or ""),
                },
            )
        ]

    def send(self, http: httpx.Client, message: InboundMessage, text: str) -> None:
        """Post an answer nobody waits for any more (see the module doc)."""
        if self.api is None:
            raise DeliveryFailed(
                "the Google Chat event was answered before the agent finished, and a late "
                "answer needs GCHAT_SERVICE_ACCOUNT (`nika setup bridge`)",
                retry=False,
            )
        self.api.post(http, message, text)
