"""WhatsApp Business Cloud API: verify handshake, signed POSTs, Graph messages endpoint.

- GET ``/webhooks/whatsapp?hub.mode=subscribe&hub.verify_token=…&hub.challenge=…``: Meta's
  subscription handshake; the challenge is echoed only when the token matches.
- POST: ``X-Hub-Signature-256: sha256=HEX`` is the HMAC-SHA256 of the *raw* body with the app
  secret, compared in constant time before the body is parsed. Text messages are read from
  ``entry[].changes[].value.messages[]`` (``from``, ``id``, ``timestamp``, ``text.body``);
  statuses and other message types are skipped.
- Replies: ``POST {graph_url}/{phone_number_id}/messages`` with the access token, quoting the
  message they answer (``context.message_id``), cut at 4,096 characters per message.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx

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

MAX_TEXT = 4096


def signature(app_secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value Meta sends for ``body``."""
    return "sha256=" + hmac.new(app_secret.encode(), body, hashlib.sha256).hexdigest()


@dataclass
class WhatsAppAdapter:
    """The WhatsApp gateway."""

    app_secret: str
    verify_token: str
    access_token: str
    graph_url: str
    gateway: Gateway = Gateway.WHATSAPP

    def handshake(self, query: dict[str, str]) -> str:
        """The challenge to echo for a valid subscription request.

        Raises:
            BridgeRefused: 403 when the mode or the token is wrong, 400 without a challenge.
        """
        if query.get("hub.mode") != "subscribe":
            raise BridgeRefused(403, "verification: hub.mode is not 'subscribe'")
        token = query.get("hub.verify_token", "")
        if not self.verify_token or not hmac.compare_digest(token, self.verify_token):
            raise BridgeRefused(403, "verification: hub.verify_token does not match")
        challenge = query.get("hub.challenge", "")
        if not challenge or len(challenge) > 256:
            raise BridgeRefused(400, "verification: no hub.challenge")
        return challenge

    async def verify(self, request: WebhookRequest) -> Verified:
        """Check the body's HMAC, then parse it."""
        given = request.headers.get("x-hub-signature-256", "")
        if not given:
            raise BridgeRefused(401, "no X-Hub-Signature-256 header")
        if not hmac.compare_digest(given, signature(self.app_secret, request.body)):
            raise BridgeRefused(401, "X-Hub-Signature-256 does not match the body")
        return Verified(parse_json(request.body), {})

    def parse(self, verified: Verified) -> list[InboundMessage]:
        """Text messages of a ``whatsapp_business_account`` notification."""
        payload = verified.payload
        if payload.get("object") != "whatsapp_business_account":
            raise BridgeRefused(400, "object is not 'whatsapp_business_account'")
        entries = payload.get("entry")
        if not isinstance(entries, list):
            raise BridgeRefused(400, "entry is not a list")
        out: list[InboundMessage] = []
        for entry in entries:
            for change in as_dict(entry, "entry[]").get("changes") or []:
                change = as_dict(change, "entry[].changes[]")
                if change.get("field") != "messages":
                    continue
                out.extend(self._messages(as_dict(change.get("value"), "changes[].value")))
        return out

    def _messages(self, value: dict[str, Any]) -> list[InboundMessage]:
        metadata = as_dict(value.get("metadata"), "value.metadata")
        phone_number_id = as_str(metadata.get("phone_number_id"), "metadata.phone_number_id")
        out: list[InboundMessage] = []
        for raw in value.get("messages") or []:
            item = as_dict(raw, "value.messages[]")
            if item.get("type") != "text":
                continue
            try:
                sender = normalize_sender(Gateway.WHATSAPP, as_str(item.get("from"), "from"))
            except SenderInvalid as exc:
                raise BridgeRefused(400, f"messages[].from: {exc}") from exc
            text = as_str(as_dict(item.get("text"), "messages[].text").get("body"), "text.body")
            stamp = item.get("timestamp")
            sent = (
                datetime.fromtimestamp(int(stamp), UTC)
                if isinstance(stamp, str) and stamp.isdigit()
                else None
            )
            out.append(
                InboundMessage(
                    gateway=Gateway.WHATSAPP,
                    message_id=as_str(item.get("id"), "messages[].id", 512),
                    sender=sender,
                    conversation=sender,
                    text=text,
                    sent_at=sent,
                    reply_to={"phone_number_id": phone_number_id},
                )
            )
        return out

    def send(self, http: httpx.Client, message: InboundMessage, text: str) -> None:
        """POST the answer to the Graph messages endpoint (split when long)."""
        number_id = message.reply_to.get("phone_number_id", "")
        url = f"{self.graph_url.rstrip('/')}/{number_id}/messages"
        for n, part in enumerate(chunks(text, MAX_TEXT)):
            body: dict[str, Any] = {
                "messaging_product": "whatsapp",
                "recipient_type": "individual",
                "to": message.sender,
                "type": "text",
                "text": {"preview_url": False, "body": part},
            }
            if n == 0:
                body["context"] = {"message_id": message.message_id}
            try:
                response = http.post(
                    url, json=body, headers={"Authorization": f"Bearer {self.access_token}"}
                )
            except httpx.HTTPError as exc:
                raise unreachable(exc, "WhatsApp Graph API") from exc
            if response.status_code // 100 != 2:
                raise failed(response, "WhatsApp Graph API")
