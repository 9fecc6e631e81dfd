"""Contabo API (``https://api.contabo.com/v1/compute/instances``), OAuth2 password grant.

Every request carries ``Authorization: Bearer`` and the mandatory ``x-request-id`` (a UUID4).
Contabo instances take no tags on create, so ``displayName`` carries the markers
(``nika-{tenant}--{plan}``). Create is one call (nothing half-made on refusal); delete is the
``cancel`` action (Contabo ends the contract at the end of the period). Errors are
``{"statusCode": ..., "message": ...}``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import httpx

from nika_tui.domain.tenant import Provider
from nika_tui.scale.providers.base import Instance, WorkerSpec, parse_worker_name
from nika_tui.scale.providers.http import CloudHttp, ErrorInfo, json_error, status_kind
from nika_tui.scale.providers.oauth import fetch_token

BASE_URL = "https://api.contabo.com"
AUTH_URL = "https://auth.contabo.com"


def parse_error(resp: httpx.Response) -> ErrorInfo:
    """``(kind, code, message)`` from a Contabo error body."""
    body = json_error(resp)
    message = str(body.get("message") or resp.reason_phrase)
    kind = status_kind(resp.status_code)
    lowered = message.lower()
    if "region" in lowered or "datacenter" in lowered:
        kind = "region"
    elif "limit" in lowered or "quota" in lowered or resp.status_code == 402:
        kind = "quota"
    return kind, f"HTTP {body.get('statusCode', resp.status_code)}", message


class Contabo:
    """Contabo compute adapter.

    Args:
        secrets: ``client_id``, ``client_secret``, ``user``, ``password``.
        base_url: API base (a local stand-in in tests).
        auth_url: Keycloak base for the token (defaults to Contabo's; same stand-in in tests).
        http: The HTTP layer; one is made when omitted.
    """

    provider = Provider.CONTABO

    def __init__(
        self,
        secrets: Mapping[str, str],
        base_url: str = BASE_URL,
        auth_url: str | None = None,
        http: CloudHttp | None = None,
    ) -> None:
        self._secrets = dict(secrets)
        self._base = f"{base_url.rstrip('/')}/v1/compute/instances"
        self._auth = (auth_url or (AUTH_URL if base_url == BASE_URL else base_url)).rstrip("/")
        self.http = http or CloudHttp(self.provider, parse_error)
        self.http.secrets = tuple(secrets.values())
        self._token: str | None = None

    def _headers(self) -> dict[str, str]:
        if self._token is None:
            self._token = fetch_token(
                self.http,
                f"{self._auth}/auth/realms/contabo/protocol/openid-connect/token",
                {
                    "grant_type": "password",
                    "client_id": self._secrets["client_id"],
                    "client_secret": self._secrets["client_secret"],
                    "username": self._secrets["user"],
                    "password": self._secrets["password"],
                },
            )
        return {"Authorization": f"Bearer {self._token}", "x-request-id": str(uuid.uuid4())}

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self.http.send(method, f"{self._base}{path}", headers=self._headers(), **kwargs)

    def create(self, spec: WorkerSpec) -> Instance:
        """Order one instance (monthly contract, one month)."""
        body = {
            "imageId": spec.image,
            "productId": spec.instance_type,
            "region": spec.region,
            "period": 1,
            "displayName": spec.name,
            "userData": spec.user_data,
        }
        data = self._send("POST", "", json=body).json()["data"][0]
        return Instance(
            self.provider,
            str(data["instanceId"]),
            spec.name,
            spec.tenant_id,
            spec.plan_id,
            str(data.get("status", "provisioning")),
        )

    def list(self) -> list[Instance]:
        """Every instance whose display name nika gave it (all pages)."""
        out: list[Instance] = []
        page = 1
        while True:
            params: dict[str, str | int] = {"page": page, "size": 100, "displayName": "nika-"}
            body = self._send("GET", "", params=params).json()
            for item in body.get("data", []):
                parsed = parse_worker_name(str(item.get("displayName", "")))
                if parsed is None or item.get("cancelDate"):  # cancelled: ends with its period
                    continue
                out.append(
                    Instance(
                        self.provider,
                        str(item["instanceId"]),
                        str(item["displayName"]),
                        parsed[0],
                        parsed[1],
                        str(item.get("status", "")),
                    )
                )
            pagination = body.get("_pagination", {})
            if page >= int(pagination.get("totalPages", 1)):
                return out
            page += 1

    def delete(self, instance_id: str) -> None:
        """Cancel the instance; gone already is fine."""
        self._send("POST", f"/{instance_id}/cancel", ok_missing=True)
