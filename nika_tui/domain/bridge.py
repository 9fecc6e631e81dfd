"""The bridge's pure parts: gateways, the sender → tenant map, inbound messages, rate limits.

Seed 1 (« Bridge → tenant routing »): a gateway (WhatsApp Business, Teams, Google Chat)
receives a message, the bridge router looks up the sender's tenant and routes the message to
``nika-tenant-{id}``; the reply goes back through the same gateway to the same conversation.
Everything here is a value or a function of values (the clock is an argument); the HTTP
server, Redis and tmux live in :mod:`nika_tui.bridge`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from nika_tui.domain.envelope import ActionType, NikaMeta, Trigger
from nika_tui.domain.tenant_id import TENANT_ID_PATTERN

BRIDGE_SCHEMA_VERSION = 1
MAX_TEXT_CHARS = 4000
"""Longest message text typed into a kernel (longer ones are cut, with a marker)."""


class Gateway(StrEnum):
    WHATSAPP = "whatsapp"
    TEAMS = "teams"
    GCHAT = "gchat"


GATEWAY_LABELS: dict[Gateway, str] = {
    Gateway.WHATSAPP: "WhatsApp Business",
    Gateway.TEAMS: "Microsoft Teams",
    Gateway.GCHAT: "Google Chat",
}

_PHONE = re.compile(r"^\+?[0-9][0-9 ().-]{4,30}$")
_OPAQUE = re.compile(r"^[A-Za-z0-9:@._/+=-]{1,256}$")


class SenderInvalid(ValueError):
    """A sender id that no gateway would send (the message says what a valid one looks like)."""


def normalize_sender(gateway: Gateway, raw: str) -> str:
    """The canonical form a gateway's sender id is stored and looked up under.

    WhatsApp sends the number as digits without ``+`` (``wa_id``); people type ``+33 6 …``:
    both become the digits only. Teams (``29:…`` / AAD object ids) and Google Chat
    (``users/123…``) ids are opaque and compared exactly, minus surrounding blanks.

    Raises:
        SenderInvalid: empty, or not the shape of that gateway's ids.
    """
    value = raw.strip()
    if gateway is Gateway.WHATSAPP:
        if not _PHONE.fullmatch(value):
            raise SenderInvalid(
                f"{value!r} is not a phone number (WhatsApp senders are numbers like +33612345678)"
            )
        digits = re.sub(r"[^0-9]", "", value)
        if not 6 <= len(digits) <= 15:
            raise SenderInvalid(f"{value!r}: a phone number has 6 to 15 digits (E.164)")
        return digits
    if not _OPAQUE.fullmatch(value):
        what = "a Teams user id (29:… or an AAD object id)"
        if gateway is Gateway.GCHAT:
            what = "a Google Chat user name (users/123…) or e-mail"
        raise SenderInvalid(f"{value!r} is not {what}")
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SenderLink(_Strict):
    """One sender of one gateway, owned by one tenant."""

    gateway: Gateway
    sender: str = Field(description="Canonical sender id (see normalize_sender).")
    tenant_id: str

    @field_validator("tenant_id")
    @classmethod
    def _tenant(cls, value: str) -> str:
        if not TENANT_ID_PATTERN.fullmatch(value):
            raise ValueError("must match ^[a-z0-9][a-z0-9-]{0,39}$")
        return value

    @model_validator(mode="after")
    def _canonical(self) -> SenderLink:
        if normalize_sender(self.gateway, self.sender) != self.sender:
            raise ValueError(f"sender {self.sender!r} is not in canonical form")
        return self


class WhatsAppSettings(_Strict):
    """WhatsApp Business Cloud API (Meta Graph)."""

    graph_url: str = Field(
        default="https://graph.facebook.com/v21.0",
        description="Graph API base (with version); WHATSAPP_GRAPH_URL overrides it.",
    )


class TeamsSettings(_Strict):
    """Microsoft Teams through the Bot Framework."""

    app_id: str = Field(default="", description="The bot's Microsoft App ID (JWT audience).")
    openid_url: str = Field(
        default="https://login.botframework.com/v1/.well-known/openidconfiguration",
        description="OpenID metadata naming the signing keys; TEAMS_OPENID_URL overrides it.",
    )
    issuer: str = Field(default="https://api.botframework.com")
    token_url: str = Field(
        default="https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token",
        description="Where the bot gets its outbound token; MICROSOFT_TOKEN_URL overrides it.",
    )


class GChatSettings(_Strict):
    """Google Chat app (HTTP endpoint)."""

    audience: str = Field(
        default="", description="The Cloud project number Chat puts in the JWT's aud."
    )
    jwks_url: str = Field(
        default="https://www.googleapis.com/service_accounts/v1/jwk/chat@system.gserviceaccount.com",
        description="Chat's service-account signing keys; GCHAT_JWKS_URL overrides it.",
    )
    issuer: str = Field(default="chat@system.gserviceaccount.com")
    api_url: str = Field(
        default="https://chat.googleapis.com",
        description="Chat REST API for answers after the event; GCHAT_API_URL overrides it.",
    )


class RateLimit(_Strict):
    """Per-sender token bucket."""

    per_minute: float = Field(default=12.0, gt=0, description="Sustained messages a minute.")
    burst: int = Field(default=5, ge=1, description="Messages accepted back to back.")


class BridgeConfig(_Strict):
    """``{config}/bridge.yaml``: links, messages and gateway settings (never a secret)."""

    schema_version: int = BRIDGE_SCHEMA_VERSION
    links: list[SenderLink] = Field(default_factory=list)
    refusal_message: str = Field(
        default="Sorry, this number is not linked to any workspace here. "
        "Ask your administrator to link it.",
        max_length=1000,
    )
    onboarding_message: str | None = Field(
        default=None, max_length=2000, description="Sent instead of the refusal when set."
    )
    rate_limited_message: str = Field(
        default="You are sending messages faster than I can take them; "
        "please wait a minute and send it again.",
        max_length=1000,
    )
    max_body_bytes: int = Field(default=256 * 1024, ge=1024, le=16 * 1024 * 1024)
    rate_limit: RateLimit = Field(default_factory=RateLimit)
    reply_timeout_s: float = Field(default=600.0, gt=0)
    gchat_sync_wait_s: float = Field(default=25.0, ge=0, le=28)
    spawn_kernels: bool = True
    headless_tenants: list[str] = Field(
        default_factory=list,
        description="Tenants answered by `claude -p --resume` per conversation, not a kernel.",
    )
    key_refetch_min_s: float = Field(
        default=30.0, ge=0, description="Least seconds between two refetches for unknown key ids."
    )
    whatsapp: WhatsAppSettings = Field(default_factory=WhatsAppSettings)
    teams: TeamsSettings = Field(default_factory=TeamsSettings)
    gchat: GChatSettings = Field(default_factory=GChatSettings)

    @model_validator(mode="after")
    def _unique(self) -> BridgeConfig:
        seen: dict[tuple[Gateway, str], str] = {}
        for link in self.links:
            key = (link.gateway, link.sender)
            if key in seen and seen[key] != link.tenant_id:
                raise ValueError(
                    f"{link.gateway.value} sender {link.sender} is linked to two tenants "
                    f"({seen[key]} and {link.tenant_id})"
                )
            seen[key] = link.tenant_id
        return self

    def tenant_of(self, gateway: Gateway, sender: str) -> str | None:
        """The tenant a (canonical) sender is linked to, or None."""
        for link in self.links:
            if link.gateway is gateway and link.sender == sender:
                return link.tenant_id
        return None

    def links_of(self, tenant_id: str) -> list[SenderLink]:
        """The senders linked to one tenant."""
        return [link for link in self.links if link.tenant_id == tenant_id]


def link(config: BridgeConfig, gateway: Gateway, raw_sender: str, tenant_id: str) -> BridgeConfig:
    """A config with the sender linked to the tenant.

    Raises:
        SenderInvalid: the sender id has the wrong shape.
        ValueError: the sender is already linked to another tenant.
    """
    sender = normalize_sender(gateway, raw_sender)
    owner = config.tenant_of(gateway, sender)
    if owner == tenant_id:
        return config
    if owner is not None:
        raise ValueError(
            f"{gateway.value} sender {sender} is already linked to tenant {owner}; "
            "unlink it first (`nika bridge unlink`)"
        )
    links = [*config.links, SenderLink(gateway=gateway, sender=sender, tenant_id=tenant_id)]
    return config.model_copy(update={"links": links})


def unlink(config: BridgeConfig, gateway: Gateway, raw_sender: str) -> tuple[BridgeConfig, bool]:
    """A config without that sender's link, and whether there was one."""
    sender = normalize_sender(gateway, raw_sender)
    kept = [ln for ln in config.links if not (ln.gateway is gateway and ln.sender == sender)]
    return config.model_copy(update={"links": kept}), len(kept) != len(config.links)


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """One text message a gateway delivered, with what its reply needs.

    Attributes:
        gateway: Where it came from.
        message_id: The gateway's id (the idempotency key with the gateway).
        sender: Canonical sender id.
        conversation: The gateway's conversation id (one per sender: the reply goes there).
        text: The message text.
        sent_at: When the gateway says it was sent (None when it does not say).
        reply_to: Gateway-specific fields the reply needs (service URL, phone number id, …).
    """

    gateway: Gateway
    message_id: str
    sender: str
    conversation: str
    text: str
    sent_at: datetime | None = None
    reply_to: dict[str, str] = field(default_factory=dict)

    def to_fields(self) -> dict[str, Any]:
        """Plain values for a JSON / stream entry."""
        return {
            "gateway": self.gateway.value,
            "message_id": self.message_id,
            "sender": self.sender,
            "conversation": self.conversation,
            "text": self.text,
            "sent_at": self.sent_at.isoformat() if self.sent_at else "",
            "reply_to": dict(self.reply_to),
        }

    @classmethod
    def from_fields(cls, data: dict[str, Any]) -> InboundMessage:
        """The inverse of :meth:`to_fields`."""
        sent = data.get("sent_at") or ""
        return cls(
            gateway=Gateway(data["gateway"]),
            message_id=str(data["message_id"]),
            sender=str(data["sender"]),
            conversation=str(data["conversation"]),
            text=str(data["text"]),
            sent_at=datetime.fromisoformat(sent) if sent else None,
            reply_to={str(k): str(v) for k, v in dict(data.get("reply_to") or {}).items()},
        )


def kernel_line(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """The message as one line an interactive agent CLI can take as a prompt.

    Control characters (escape sequences, tabs, carriage returns) are dropped so that a
    message cannot drive the terminal; line breaks become " / " because Enter submits.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    joined = " / ".join(ln.strip() for ln in lines if ln.strip())
    clean = "".join(ch for ch in joined if unicodedata.category(ch)[0] != "C" or ch == " ")
    if len(clean) > limit:
        clean = clean[: limit - 12].rstrip() + " […cut]"
    return clean


def bridge_meta(
    message: InboundMessage, tenant_id: str, cli: str, session: str, now: datetime
) -> NikaMeta:
    """NIKA_META of a bridged message: ``trigger=user``, the gateway in ``agent_type``.

    ``agent_type`` reads ``{cli}@{gateway}`` (``claude-code@whatsapp``): which agent answered
    and through which gateway the person spoke; the conversation is the session.
    """
    return NikaMeta(
        session_id=f"{message.gateway.value}:{message.conversation}"[:200],
        tmux=session,
        agent_type=f"{cli}@{message.gateway.value}"[:64],
        trigger=Trigger.USER,
        timestamp=message.sent_at or now,
        action_type=ActionType.COMMS,
        entity_ids=(f"{message.gateway.value}:{message.sender}"[:200],),
    )


@dataclass(slots=True)
class TokenBucket:
    """A token bucket; the clock is passed in (seconds, monotonic)."""

    per_minute: float
    burst: int
    tokens: float = -1.0
    updated: float = 0.0

    def take(self, now: float) -> bool:
        """Take one token if there is one; True when the message may pass."""
        if self.tokens < 0:
            self.tokens, self.updated = float(self.burst), now
        elapsed = max(0.0, now - self.updated)
        self.tokens = min(float(self.burst), self.tokens + elapsed * self.per_minute / 60.0)
        self.updated = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


def retry_delay(attempt: int, base_s: float = 1.0, cap_s: float = 60.0) -> float:
    """Seconds before retry ``attempt`` (1-based): doubling from ``base_s``, capped."""
    return float(min(cap_s, base_s * (2 ** max(0, attempt - 1))))
