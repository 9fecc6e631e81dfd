"""Scaleway Instances API (``/instance/v1/zones/{zone}/servers``), ``X-Auth-Token`` auth.

Create is three calls: ``POST servers`` (a stopped server with tags), ``PATCH
servers/{id}/user_data/cloud-init`` and ``POST servers/{id}/action {"action": "poweron"}``. If
either later call fails the stopped server is deleted (``DELETE servers/{id}``); if even that
fails its tags let :mod:`nika_tui.scale.reconcile` find it. Delete is the ``terminate`` action
(server and its local volumes). Errors are ``{"type": ..., "message": ...}``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

import httpx

from nika_tui.domain.tenant import Provider
from nika_tui.errors import ProviderError
from nika_tui.scale.providers.base import (
    MANAGED_TAG,
    PLAN_TAG,
    TENANT_TAG,
    Instance,
    WorkerSpec,
)
from nika_tui.scale.providers.http import CloudHttp, ErrorInfo, json_error, status_kind

BASE_URL = "https://api.scaleway.com"

_KINDS = {
    "denied_authentication": "auth",
    "authentication_error": "auth",
    "permissions_denied": "auth",
    "quotas_exceeded": "quota",
    "out_of_stock": "region",
    "unknown_resource": "notfound",
    "not_found": "notfound",
    "too_many_requests": "rate",
}


def parse_error(resp: httpx.Response) -> ErrorInfo:
    """``(kind, type, message)`` from a Scaleway error body."""
    body = json_error(resp)
    code = str(body.get("type") or f"HTTP {resp.status_code}")
    kind = _KINDS.get(code, status_kind(resp.status_code))
    message = str(body.get("message") or resp.reason_phrase)
    if code == "invalid_arguments" and "zone" in message.lower():
        kind = "region"
    return kind, code, message


def _tags(tags: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for tag in tags:
        key, _, value = tag.partition("=")
        out[key] = value
    return out


class Scaleway:
    """Scaleway Instances adapter.

    Args:
        secrets: ``access_key`` and ``secret_key`` (only the secret key is sent).
        zone: e.g. ``fr-par-2``.
        project_id: The Scaleway project the servers belong to.
        base_url: API base (a local stand-in in tests).
        http: The HTTP layer (rate-limit policy); one is made when omitted.
    """

    provider = Provider.SCALEWAY

    def __init__(
        self,
        secrets: Mapping[str, str],
        zone: str,
        project_id: str,
        base_url: str = BASE_URL,
        http: CloudHttp | None = None,
    ) -> None:
        self._headers = {"X-Auth-Token": secrets["secret_key"]}
        self._base = f"{base_url.rstrip('/')}/instance/v1/zones/{zone}"
        self.zone = zone
        self.project_id = project_id
        self.http = http or CloudHttp(self.provider, parse_error)
        self.http.secrets = tuple(secrets.values())

    def _send(
        self, method: str, path: str, headers: dict[str, str] | None = None, **kwargs: Any
    ) -> httpx.Response:
        url = f"{self._base}{path}"
        return self.http.send(method, url, headers=headers or self._headers, **kwargs)

    def create(self, spec: WorkerSpec) -> Instance:
        """Create, configure and power on one tagged server (deleted again on failure)."""
        tags = [MANAGED_TAG, f"{TENANT_TAG}={spec.tenant_id}", f"{PLAN_TAG}={spec.plan_id}"]
        body = {
            "name": spec.name,
            "commercial_type": spec.instance_type,
            "image": spec.image,
            "project": self.project_id,
            "tags": tags,
            "dynamic_ip_required": True,
        }
        server = self._send("POST", "/servers", json=body).json()["server"]
        server_id = str(server["id"])
        try:
            if spec.user_data:
                self._send(
                    "PATCH",
                    f"/servers/{server_id}/user_data/cloud-init",
                    content=spec.user_data.encode(),
                    headers={**self._headers, "Content-Type": "text/plain"},
                )
            self._send("POST", f"/servers/{server_id}/action", json={"action": "poweron"})
        except ProviderError:
            # A stopped server can be deleted outright; if not, its tags let reconcile find it.
            with contextlib.suppress(ProviderError):
                self._send("DELETE", f"/servers/{server_id}", ok_missing=True)
            raise
        return Instance(
            self.provider, server_id, spec.name, spec.tenant_id, spec.plan_id, "starting"
        )

    def list(self) -> list[Instance]:
        """Every server tagged ``nika-managed`` in the zone (all pages)."""
        out: list[Instance] = []
        page = 1
        while True:
            params: dict[str, str | int] = {"tags": MANAGED_TAG, "per_page": 100, "page": page}
            servers = self._send("GET", "/servers", params=params).json().get("servers", [])
            for server in servers:
                tags = _tags([str(t) for t in server.get("tags", [])])
                if MANAGED_TAG not in tags:
                    continue
                out.append(
                    Instance(
                        self.provider,
                        str(server["id"]),
                        str(server.get("name", "")),
                        tags.get(TENANT_TAG),
                        tags.get(PLAN_TAG),
                        str(server.get("state", "")),
                    )
                )
            if len(servers) < 100:
                return out
            page += 1

    def delete(self, instance_id: str) -> None:
        """Terminate the server (and its local volumes); gone already is fine."""
        self._send(
            "POST", f"/servers/{instance_id}/action", json={"action": "terminate"}, ok_missing=True
        )
