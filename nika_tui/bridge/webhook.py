"""What every gateway adapter shares: the request as received, JSON parsing, HTTP errors.

An adapter (``whatsapp``, ``teams``, ``gchat``) verifies the raw request before anything
else is trusted, parses its JSON into :class:`~nika_tui.domain.bridge.InboundMessage`\\ s and
sends replies (:class:`~nika_tui.bridge.delivery.Sender`). Every refusal is a
:class:`~nika_tui.errors.BridgeRefused` carrying the HTTP status and the reason the server logs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from nika_tui.domain.bridge import Gateway, InboundMessage
from nika_tui.errors import BridgeRefused


@dataclass(frozen=True)
class WebhookRequest:
    """One inbound request: method, lower-cased headers, query and the raw body."""

    method: str
    headers: Mapping[str, str]
    query: Mapping[str, str]
    body: bytes


@dataclass(frozen=True)
class Verified:
    """A request whose origin was proven, with its parsed JSON and the token's claims."""

    payload: dict[str, Any]
    claims: Mapping[str, Any]


class GatewayAdapter(Protocol):
    """One gateway: verify, parse, send."""

    gateway: Gateway

    async def verify(self, request: WebhookRequest) -> Verified:
        """Prove the request comes from the gateway (raises BridgeRefused)."""

    def parse(self, verified: Verified) -> list[InboundMessage]:
        """The text messages in a verified payload (others are skipped)."""

    def send(self, http: httpx.Client, message: InboundMessage, text: str) -> None:
        """Send an answer (raises DeliveryFailed)."""


def parse_json(body: bytes) -> dict[str, Any]:
    """The body as a JSON object.

    Raises:
        BridgeRefused: 400 when it is not UTF-8 JSON or not an object.
    """
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BridgeRefused(400, f"body is not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise BridgeRefused(400, "body is not a JSON object")
    return data


def as_dict(value: Any, where: str) -> dict[str, Any]:
    """A nested object, or 400 naming where."""
    if not isinstance(value, dict):
        raise BridgeRefused(400, f"{where} is not an object")
    return value


def as_str(value: Any, where: str, limit: int = 4096) -> str:
    """A non-empty string field, or 400 naming where."""
    if not isinstance(value, str) or not value or len(value) > limit:
        raise BridgeRefused(400, f"{where} is missing or not a string")
    return value


def failed(response: httpx.Response, what: str) -> Exception:
    """A :class:`DeliveryFailed` for a gateway's non-2xx answer (retry on 408/429/5xx)."""
    from nika_tui.bridge.delivery import DeliveryFailed

    status = response.status_code
    retry = status in (408, 429) or status >= 500
    return DeliveryFailed(f"{what} answered HTTP {status}: {response.text[:200]}", retry)


def unreachable(exc: httpx.HTTPError, what: str) -> Exception:
    """A retryable :class:`DeliveryFailed` for a connection failure."""
    from nika_tui.bridge.delivery import DeliveryFailed

    return DeliveryFailed(f"{what} unreachable: {type(exc).__name__}: {exc}", retry=True)


def chunks(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of at most ``size`` characters, at line or word breaks."""
    out: list[str] = []
    rest = text.strip() or "(empty answer)"
    while len(rest) > size:
        cut = rest.rfind("\n", 0, size)
        if cut < size // 2:
            cut = rest.rfind(" ", 0, size)
        if cut < size // 2:
            cut = size
        out.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    out.append(rest)
    return out
