"""Bearer JWTs of Teams (Bot Framework) and Google Chat, checked against published keys.

The keys come from a key-discovery URL: an OpenID metadata document naming ``jwks_uri``
(Bot Framework) or a JWKS document itself (Google Chat's service account). They are cached
for the document's ``Cache-Control: max-age`` (an hour when it says nothing); a token signed
by a key id we do not hold triggers one refetch (at most every ``min_refresh_s``), which is how
a key rotation is picked up without a restart and without letting a stream of bogus key ids
hammer the key server. Only RS256 is accepted (no ``none``, no HMAC with a public key).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import jwt

from nika_tui.errors import BridgeRefused

DEFAULT_TTL_S = 3600.0
MIN_REFRESH_S = 30.0
LEEWAY_S = 300
"""Clock skew allowed on exp / nbf (Bot Framework's documented five minutes)."""
ALGORITHMS = ["RS256"]
_MAX_AGE = re.compile(r"max-age=(\d+)")


@dataclass
class JwksCache:
    """The signing keys behind one discovery URL.

    Attributes:
        url: OpenID metadata (with ``jwks_uri``) or a JWKS URL.
        client: The HTTP client used to fetch.
        clock: Monotonic seconds (tests pass their own).
    """

    url: str
    client: httpx.AsyncClient
    clock: Callable[[], float] = time.monotonic
    min_refresh_s: float = MIN_REFRESH_S
    keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    fetched_at: float = -1e18
    expires_at: float = -1e18
    fetches: int = 0
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def _get_json(self, url: str) -> tuple[dict[str, Any], float]:
        try:
            response = await self.client.get(url, timeout=10.0)
        except httpx.HTTPError as exc:
            raise BridgeRefused(503, f"cannot fetch signing keys from {url}: {exc}") from exc
        if response.status_code != 200:
            raise BridgeRefused(503, f"signing keys at {url} answered HTTP {response.status_code}")
        try:
            data = response.json()
        except (json.JSONDecodeError, ValueError) as exc:
            raise BridgeRefused(503, f"signing keys at {url} are not JSON") from exc
        if not isinstance(data, dict):
            raise BridgeRefused(503, f"signing keys at {url} are not a JSON object")
        match = _MAX_AGE.search(response.headers.get("cache-control", ""))
        return data, float(match.group(1)) if match else DEFAULT_TTL_S

    async def refresh(self) -> None:
        """Fetch the keys now (following ``jwks_uri`` when the URL is OpenID metadata)."""
        data, ttl = await self._get_json(self.url)
        if "jwks_uri" in data and "keys" not in data:
            data, ttl = await self._get_json(str(data["jwks_uri"]))
        keys = data.get("keys")
        if not isinstance(keys, list):
            raise BridgeRefused(503, f"no 'keys' in the signing keys behind {self.url}")
        self.keys = {
            str(k["kid"]): k for k in keys if isinstance(k, dict) and isinstance(k.get("kid"), str)
        }
        self.fetches += 1
        self.fetched_at = self.clock()
        self.expires_at = self.fetched_at + ttl

    async def key(self, kid: str) -> dict[str, Any]:
        """The JWK with that id (refetching on expiry or an unknown id, rate-limited).

        Raises:
            BridgeRefused: 401 for an id the key server does not publish, 503 when the keys
                cannot be fetched.
        """
        async with self._lock:
            now = self.clock()
            stale = now >= self.expires_at
            unknown = kid not in self.keys and now - self.fetched_at >= self.min_refresh_s
            if stale or unknown:
                await self.refresh()
        found = self.keys.get(kid)
        if found is None:
            raise BridgeRefused(401, f"token signed by unknown key id {kid[:40]!r}")
        return found


async def verify_bearer(
    authorization: str | None,
    keys: JwksCache,
    *,
    audience: str,
    issuers: Sequence[str],
    endorsement: str | None = None,
    leeway_s: int = LEEWAY_S,
) -> dict[str, Any]:
    """Check an ``Authorization: Bearer`` JWT; its claims.

    Args:
        authorization: The header's value.
        keys: The key cache of the gateway.
        audience: The expected ``aud``.
        issuers: Accepted ``iss`` values.
        endorsement: A channel the signing key must endorse when it lists endorsements
            (Bot Framework keys name the channels they may sign for).
        leeway_s: Clock skew allowed.

    Raises:
        BridgeRefused: 401 with the reason (missing, malformed, bad signature, expired,
            wrong issuer or audience), 503 when the keys cannot be fetched.
    """
    if not authorization or not authorization.startswith("Bearer "):
        raise BridgeRefused(401, "no bearer token in the Authorization header")
    token = authorization.removeprefix("Bearer ").strip()
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise BridgeRefused(401, f"malformed bearer token ({exc})") from exc
    if header.get("alg") not in ALGORITHMS:
        raise BridgeRefused(401, f"token algorithm {header.get('alg')!r} is not RS256")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise BridgeRefused(401, "token has no key id (kid)")
    jwk = await keys.key(kid)
    endorsements = jwk.get("endorsements")
    if endorsement and isinstance(endorsements, list) and endorsement not in endorsements:
        raise BridgeRefused(401, f"signing key {kid[:40]!r} does not endorse {endorsement!r}")
    try:
        public = jwt.PyJWK(jwk, algorithm="RS256").key
        claims: dict[str, Any] = jwt.decode(
            token,
            public,
            algorithms=ALGORITHMS,
            audience=audience,
            issuer=list(issuers),
            leeway=leeway_s,
            options={"require": ["exp", "iss", "aud"]},
        )
    except jwt.ExpiredSignatureError as exc:
        raise BridgeRefused(401, "token expired") from exc
    except jwt.InvalidAudienceError as exc:
        raise BridgeRefused(401, "token audience is not this bot / project") from exc
    except jwt.InvalidIssuerError as exc:
        raise BridgeRefused(401, "token issuer is not the gateway's") from exc
    except jwt.InvalidSignatureError as exc:
        raise BridgeRefused(401, "token signature does not verify") from exc
    except jwt.PyJWTError as exc:
        raise BridgeRefused(401, f"token rejected ({exc})") from exc
    return claims
