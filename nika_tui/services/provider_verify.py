"""Opt-in online credential checks (``nika setup --verify``): read-only, 5 s timeout.

Each check makes one request that only *reads* (an identity or token call) and tells apart:
``ok`` (the provider accepted the key), ``invalid`` (401/403, or the OAuth error that means a bad
client), ``network`` (DNS, connection, TLS or timeout: the key is not judged), ``error`` (any
other answer). In privacy mode ``local`` nothing leaves the machine: every check is ``skipped``.
Base URLs are injectable (:class:`Endpoints`) so tests talk to a server on 127.0.0.1.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import quote

import httpx

from nika_tui.domain.provider_formats import parse_service_account
from nika_tui.domain.tenant import Privacy, Provider

DEFAULT_TIMEOUT = 5.0


class VerifyStatus(StrEnum):
    OK = "ok"
    INVALID = "invalid"
    NETWORK = "network"
    ERROR = "error"
    SKIPPED = "skipped"


@dataclass(frozen=True, slots=True)
class VerifyResult:
    """The outcome of one provider's online check (never contains a secret)."""

    provider: Provider
    status: VerifyStatus
    detail: str


@dataclass(frozen=True, slots=True)
class Endpoints:
    """Base URLs of the read-only endpoints (overridable for tests)."""

    scaleway: str = "https://api.scaleway.com"
    contabo: str = "https://auth.contabo.com"
    azure: str = "https://login.microsoftonline.com"
    gcp: str = "https://oauth2.googleapis.com"
    aws: str = "https://sts.amazonaws.com"
    runpod: str = "https://rest.runpod.io"

    @classmethod
    def local(cls, base: str) -> Endpoints:
        """Every provider at one base URL (a local test server)."""
        return cls(base, base, base, base, base, base)


_OAUTH_INVALID = {"invalid_client", "unauthorized_client", "invalid_grant", "invalid_request"}


def _oauth_error(resp: httpx.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return ""
    return str(body.get("error", "")) if isinstance(body, dict) else ""


def _classify(provider: Provider, resp: httpx.Response, oauth: bool = False) -> VerifyResult:
    if resp.status_code < 300:
        return VerifyResult(provider, VerifyStatus.OK, f"accepted (HTTP {resp.status_code})")
    if resp.status_code in (401, 403):
        return VerifyResult(
            provider, VerifyStatus.INVALID, f"rejected the credentials (HTTP {resp.status_code})"
        )
    if oauth and resp.status_code == 400 and (err := _oauth_error(resp)) in _OAUTH_INVALID:
        return VerifyResult(provider, VerifyStatus.INVALID, f"rejected the credentials ({err})")
    return VerifyResult(
        provider, VerifyStatus.ERROR, f"unexpected answer HTTP {resp.status_code}; try later"
    )


def _scaleway(c: httpx.Client, e: Endpoints, v: Mapping[str, str]) -> httpx.Response:
    url = f"{e.scaleway}/iam/v1alpha1/api-keys/{quote(v['access_key'], safe='')}"
    return c.get(url, headers={"X-Auth-Token": v["secret_key"]})


def _contabo(c: httpx.Client, e: Endpoints, v: Mapping[str, str]) -> httpx.Response:
    return c.post(
        f"{e.contabo}/auth/realms/contabo/protocol/openid-connect/token",
        data={
            "grant_type": "password",
            "client_id": v["client_id"],
            "client_secret": v["client_secret"],
            "username": v["user"],
            "password": v["password"],
        },
    )


def _azure(c: httpx.Client, e: Endpoints, v: Mapping[str, str]) -> httpx.Response:
    return c.post(
        f"{e.azure}/{quote(v['tenant_id'], safe='')}/oauth2/v2.0/token",
        data={
            "grant_type": "client_credentials",
            "client_id": v["client_id"],
            "client_secret": v["client_secret"],
            "scope": "https://management.azure.com/.default",
        },
    )


def _gcp(c: httpx.Client, e: Endpoints, v: Mapping[str, str]) -> httpx.Response:
    import jwt

    info = parse_service_account(v["service_account"])
    if isinstance(info, str):
        raise ValueError(info)
    token_url = f"{e.gcp}/token"
    now = int(time.time())
    claims = {
        "iss": info["client_email"],
        "scope": "https://www.googleapis.com/auth/cloud-platform.read-only",
        "aud": token_url,
        "iat": now,
        "exp": now + 300,
    }
    headers = {"kid": str(info.get("private_key_id", ""))}
    try:
        assertion = jwt.encode(claims, str(info["private_key"]), algorithm="RS256", headers=headers)
    except (jwt.PyJWTError, ValueError, TypeError) as exc:
        # The message would not contain the key, but say less anyway.
        raise ValueError("private_key cannot sign a token") from exc
    return c.post(
        token_url,
        data={"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": assertion},
    )


def sigv4_headers(
    access_key: str,
    secret_key: str,
    url: str,
    body: str,
    now: dt.datetime,
    region: str = "us-east-1",
    service: str = "sts",
    content_type: str = "application/x-www-form-urlencoded; charset=utf-8",
) -> dict[str, str]:
    """AWS Signature Version 4 headers for a form POST (stdlib only).

    Checked against AWS's published SigV4 test vector ``post-x-www-form-urlencoded``.
    """
    parsed = httpx.URL(url)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    day = now.strftime("%Y%m%d")
    host = parsed.netloc.decode()
    canonical_headers = f"content-type:{content_type}\nhost:{host}\nx-amz-date:{amz_date}\n"
    signed = "content-type;host;x-amz-date"
    payload_hash = hashlib.sha256(body.encode()).hexdigest()
    canonical = "\n".join(["POST", parsed.path or "/", "", canonical_headers, signed, payload_hash])
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )

    def _h(key: bytes, msg: str) -> bytes:
        return hmac.new(key, msg.encode(), hashlib.sha256).digest()

    key = _h(_h(_h(_h(f"AWS4{secret_key}".encode(), day), region), service), "aws4_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return {
        "Content-Type": content_type,
        "X-Amz-Date": amz_date,
        "Authorization": (
            f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={signed}, "
            f"Signature={signature}"
        ),
    }


def _aws(c: httpx.Client, e: Endpoints, v: Mapping[str, str]) -> httpx.Response:
    body = "Action=GetCallerIdentity&Version=2011-06-15"
    url = f"{e.aws}/"
    now = dt.datetime.now(dt.UTC)
    headers = sigv4_headers(v["access_key_id"], v["secret_access_key"], url, body, now)
    return c.post(url, content=body.encode(), headers=headers)


def _runpod(c: httpx.Client, e: Endpoints, v: Mapping[str, str]) -> httpx.Response:
    return c.get(f"{e.runpod}/v1/pods", headers={"Authorization": f"Bearer {v['api_key']}"})


_CHECKS: dict[
    Provider, tuple[Callable[[httpx.Client, Endpoints, Mapping[str, str]], httpx.Response], bool]
] = {
    Provider.SCALEWAY: (_scaleway, False),
    Provider.CONTABO: (_contabo, True),
    Provider.AZURE: (_azure, True),
    Provider.GCP: (_gcp, True),
    Provider.AWS: (_aws, False),
    Provider.RUNPOD: (_runpod, False),
}


def verify_provider(
    provider: Provider,
    values: Mapping[str, str],
    *,
    endpoints: Endpoints | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> VerifyResult:
    """Check one provider's credentials online with a single read-only request.

    Args:
        provider: The provider.
        values: Its field values (``{field: value}``; GCP: the JSON text).
        endpoints: Base URLs (default: the real ones).
        timeout: Seconds for connect + read.

    Returns:
        ``ok``, ``invalid``, ``network`` or ``error``, with a detail free of secrets.
    """
    check, oauth = _CHECKS[provider]
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False) as client:
            resp = check(client, endpoints or Endpoints(), values)
    except httpx.TimeoutException:
        return VerifyResult(
            provider, VerifyStatus.NETWORK, f"no answer within {timeout:g} s (key not judged)"
        )
    except httpx.TransportError as exc:
        return VerifyResult(
            provider,
            VerifyStatus.NETWORK,
            f"network failure: {type(exc).__name__} (key not judged)",
        )
    except (KeyError, ValueError) as exc:
        return VerifyResult(provider, VerifyStatus.ERROR, f"cannot build the request: {exc}")
    return _classify(provider, resp, oauth)


def verify_providers(
    values: Mapping[Provider, Mapping[str, str]],
    privacy: Privacy,
    *,
    endpoints: Endpoints | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[VerifyResult]:
    """Check several providers; all ``skipped`` in privacy mode ``local``."""
    if privacy is Privacy.LOCAL:
        return [
            VerifyResult(p, VerifyStatus.SKIPPED, "privacy 'local': nothing leaves the machine")
            for p in values
        ]
    return [verify_provider(p, v, endpoints=endpoints, timeout=timeout) for p, v in values.items()]
