"""Google Compute Engine (``compute/v1/projects/{p}/zones/{z}/instances``), service-account JWT.

The token is an OAuth2 JWT-bearer grant signed with the service account's key (RS256). Create
is one ``POST`` answered by an Operation; an Operation that already carries an ``error`` means
the instance may exist half-made, so it is deleted. Instances carry the markers as labels and
are listed with ``filter=labels.nika-managed=true``. Errors are ``{"error": {"code", "message",
"status", "errors": [{"reason"}]}}``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from nika_tui.domain.provider_formats import parse_service_account
from nika_tui.domain.tenant import Provider
from nika_tui.errors import ProviderError
from nika_tui.scale.providers.base import (
    MANAGED_TAG,
    Instance,
    WorkerSpec,
    named_instance,
    worker_tags,
)
from nika_tui.scale.providers.http import (
    CloudHttp,
    ErrorInfo,
    json_error,
    provider_error,
    status_kind,
    status_only,
)
from nika_tui.scale.providers.oauth import fetch_token

BASE_URL = "https://compute.googleapis.com"
TOKEN_URL = "https://oauth2.googleapis.com"
SCOPE = "https://www.googleapis.com/auth/compute"

_REASONS = {
    "quotaExceeded": "quota",
    "rateLimitExceeded": "rate",
    "userRateLimitExceeded": "rate",
    "authError": "auth",
    "forbidden": "auth",
    "notFound": "notfound",
}


def parse_error(resp: httpx.Response) -> ErrorInfo:
    """``(kind, reason, message)`` from a Google API error body."""
    error = json_error(resp).get("error")
    if not isinstance(error, dict):
        return status_only(resp)
    reasons = [str(e.get("reason", "")) for e in error.get("errors", []) if isinstance(e, dict)]
    reason = reasons[0] if reasons else str(error.get("status", resp.status_code))
    message = str(error.get("message", ""))
    kind = _REASONS.get(reason, status_kind(resp.status_code))
    if kind == "notfound" and "/zones/" in message:
        kind = "region"  # the zone itself does not exist
    if "ZONE_RESOURCE_POOL_EXHAUSTED" in message or reason == "resourceNotReady":
        kind = "region"
    return kind, reason, message


class GoogleCompute:
    """Compute Engine adapter.

    Args:
        secrets: ``service_account`` (the JSON text).
        zone: e.g. ``europe-west4-a``.
        base_url: API base (a local stand-in in tests).
        token_url: Token endpoint base (defaults to Google's; same stand-in in tests).
        http: The HTTP layer; one is made when omitted.
        clock: Seconds since the epoch (JWT ``iat``).
    """

    provider = Provider.GCP

    def __init__(
        self,
        secrets: Mapping[str, str],
        zone: str,
        base_url: str = BASE_URL,
        token_url: str | None = None,
        http: CloudHttp | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        info = parse_service_account(secrets["service_account"])
        if isinstance(info, str):
            raise provider_error(self.provider, "auth", "service_account", info)
        self._info = info
        self.project = str(info["project_id"])
        self.zone = zone
        self._base = (
            f"{base_url.rstrip('/')}/compute/v1/projects/{self.project}/zones/{zone}/instances"
        )
        root = token_url or (TOKEN_URL if base_url == BASE_URL else base_url)
        self._token_url = f"{root.rstrip('/')}/token"
        self.http = http or CloudHttp(self.provider, parse_error)
        self.http.secrets = tuple(secrets.values())
        self._clock = clock
        self._token: str | None = None

    def _assertion(self) -> str:
        import jwt

        now = int(self._clock())
        claims = {
            "iss": self._info["client_email"],
            "scope": SCOPE,
            "aud": self._token_url,
            "iat": now,
            "exp": now + 3600,
        }
        try:
            return jwt.encode(
                claims,
                str(self._info["private_key"]),
                algorithm="RS256",
                headers={"kid": str(self._info.get("private_key_id", ""))},
            )
        except (jwt.PyJWTError, ValueError, TypeError) as exc:
            raise provider_error(
                self.provider, "auth", "private_key", "the key cannot sign a token"
            ) from exc

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        if self._token is None:
            self._token = fetch_token(
                self.http,
                self._token_url,
                {
                    "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                    "assertion": self._assertion(),
                },
            )
        headers = {"Authorization": f"Bearer {self._token}"}
        return self.http.send(method, f"{self._base}{path}", headers=headers, **kwargs)

    def create(self, spec: WorkerSpec) -> Instance:
        """Insert one labelled instance; an Operation that reports an error is undone."""
        zone_path = f"zones/{self.zone}"
        body = {
            "name": spec.name,
            "machineType": f"{zone_path}/machineTypes/{spec.instance_type}",
            "labels": worker_tags(spec.tenant_id, spec.plan_id),
            "disks": [
                {"boot": True, "autoDelete": True, "initializeParams": {"sourceImage": spec.image}}
            ],
            "networkInterfaces": [
                {
                    "network": "global/networks/default",
                    "accessConfigs": [{"type": "ONE_TO_ONE_NAT"}],
                }
            ],
            "metadata": {"items": [{"key": "user-data", "value": spec.user_data}]},
        }
        operation = self._send("POST", "", json=body).json()
        errors = (operation.get("error") or {}).get("errors") or []
        if errors:
            with contextlib.suppress(ProviderError):
                self.delete(spec.name)
            first = errors[0]
            kind = "quota" if "QUOTA" in str(first.get("code", "")) else "region"
            raise provider_error(
                self.provider, kind, str(first.get("code")), str(first.get("message", ""))
            )
        return Instance(
            self.provider,
            spec.name,
            spec.name,
            spec.tenant_id,
            spec.plan_id,
            str(operation.get("status", "PENDING")),
        )

    def list(self) -> list[Instance]:
        """Every instance of the zone labelled ``nika-managed=true`` (follows page tokens)."""
        out: list[Instance] = []
        params: dict[str, str] = {"filter": f"labels.{MANAGED_TAG}=true", "maxResults": "500"}
        while True:
            body = self._send("GET", "", params=params).json()
            for item in body.get("items", []):
                labels, state = item.get("labels") or {}, str(item.get("status", ""))
                found = named_instance(self.provider, str(item["name"]), labels, state)
                out += [found] if found else []
            token = body.get("nextPageToken")
            if not token:
                return out
            params = {**params, "pageToken": str(token)}

    def delete(self, instance_id: str) -> None:
        """Delete the instance (its boot disk auto-deletes); gone already is fine."""
        self._send("DELETE", f"/{instance_id}", ok_missing=True)
