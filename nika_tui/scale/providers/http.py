"""The HTTP layer every adapter shares: errors into ``ProviderError``, 429 and Retry-After.

Each adapter parses its provider's error body into ``(kind, code, message)`` and this module
turns it into one line naming the provider and the fix. A rate-limited answer (429, or AWS's
``RequestLimitExceeded``) is retried after ``Retry-After`` seconds when that is at most
``max_wait_s`` and retries remain; otherwise it is an error that says when to try again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from nika_tui.domain.provider_formats import PROVIDER_LABELS
from nika_tui.domain.tenant import Provider
from nika_tui.errors import ProviderError

#: ``(kind, code, message)``: kind is auth | quota | region | rate | notfound | other.
ErrorInfo = tuple[str, str, str]
ErrorParser = Callable[[httpx.Response], ErrorInfo]

DEFAULT_TIMEOUT = 20.0


def _hint(provider: Provider, kind: str) -> str:
    label = PROVIDER_LABELS[provider]
    return {
        "auth": f"check the {label} credentials: `nika setup providers --tenant T --verify`",
        "quota": f"raise the quota in the {label} console, or pick a smaller instance type",
        "region": f"pick another region/zone or instance type in the tenant's scale settings "
        f"for {label}",
        "rate": f"{label} is rate-limiting: wait and run the command again",
        "network": f"check the network path to {label} (proxy, DNS, firewall)",
    }.get(kind, f"see the {label} console; nothing was left running")


def provider_error(provider: Provider, kind: str, code: str, message: str) -> ProviderError:
    """One-line error naming the provider, its code and the fix."""
    label = PROVIDER_LABELS[provider]
    text = " ".join(message.split())[:200]
    return ProviderError(f"{label} refused: {code}: {text}", _hint(provider, kind), kind)


def retry_after_s(resp: httpx.Response, default: float = 1.0) -> float:
    """Seconds from a ``Retry-After`` header (delta-seconds form), else ``default``."""
    raw = resp.headers.get("Retry-After", "").strip()
    try:
        return max(0.0, float(raw))
    except ValueError:
        return default


class CloudHttp:
    """An httpx client bound to one provider's error conventions.

    Args:
        provider: Whose API this is (for messages).
        parse_error: The provider's error-body parser.
        max_retries: Rate-limited answers retried at most this many times.
        max_wait_s: Longest ``Retry-After`` honoured by waiting; longer ones are errors.
        sleep: How to wait (``time.sleep``).
        timeout: Seconds per request.
    """

    def __init__(
        self,
        provider: Provider,
        parse_error: ErrorParser,
        *,
        max_retries: int = 3,
        max_wait_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.provider = provider
        self.parse_error = parse_error
        self.max_retries = max_retries
        self.max_wait_s = max_wait_s
        self._sleep = sleep
        self.client = httpx.Client(timeout=timeout, follow_redirects=False)
        self.secrets: tuple[str, ...] = ()
        """Values scrubbed from any error text (an API that echoes a key never leaks it)."""

    def scrub(self, text: str) -> str:
        """``text`` with every known secret value replaced by ``***``."""
        for secret in self.secrets:
            if len(secret) >= 6:
                text = text.replace(secret, "***")
        return text

    def close(self) -> None:
        """Close the connection pool."""
        self.client.close()

    def send(
        self, method: str, url: str, *, ok_missing: bool = False, **kwargs: Any
    ) -> httpx.Response:
        """Send one request; return a 2xx answer (or a 404 when ``ok_missing``).

        Raises:
            ProviderError: Any other answer, a rate limit beyond the budget, or no network.
        """
        attempt = 0
        while True:
            try:
                resp = self.client.request(method, url, **kwargs)
            except httpx.TransportError as exc:
                raise ProviderError(
                    f"{PROVIDER_LABELS[self.provider]} unreachable: {type(exc).__name__}",
                    _hint(self.provider, "network"),
                    "network",
                ) from exc
            if resp.status_code < 300 or (ok_missing and resp.status_code == 404):
                return resp
            kind, code, message = self.parse_error(resp)
            if resp.status_code == 429:
                kind = "rate"
            if kind == "rate":
                wait = retry_after_s(resp)
                if attempt < self.max_retries and wait <= self.max_wait_s:
                    attempt += 1
                    self._sleep(wait)
                    continue
                message = f"{message} (retry after {wait:g} s)"
            if ok_missing and kind == "notfound":
                return resp
            raise provider_error(self.provider, kind, self.scrub(code), self.scrub(message))


def json_error(resp: httpx.Response) -> dict[str, Any]:
    """The JSON body of an error answer, or ``{}``."""
    try:
        body = resp.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def status_only(resp: httpx.Response) -> ErrorInfo:
    """``(kind, "HTTP n", reason)`` from the status line, for a body the parser cannot read."""
    return status_kind(resp.status_code), f"HTTP {resp.status_code}", resp.reason_phrase


def status_kind(status: int) -> str:
    """The kind an HTTP status implies when the body says nothing more precise."""
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "notfound"
    if status == 429:
        return "rate"
    return "other"
