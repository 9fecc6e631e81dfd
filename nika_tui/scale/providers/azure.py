"""Microsoft Azure Compute (ARM ``Microsoft.Compute/virtualMachines``), client-credentials token.

A VM is one ``PUT`` (api-version 2024-07-01) whose ``networkProfile`` declares its NIC inline
(``networkInterfaceConfigurations`` on the configured subnet, ``deleteOption: Delete``) and whose
OS disk is deleted with it, so deleting the VM leaves nothing behind. If ARM accepts the PUT and
then reports ``provisioningState: Failed``, the VM is deleted at once. Errors are
``{"error": {"code": ..., "message": ...}}``; 429 answers carry ``Retry-After``.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Mapping
from typing import Any

import httpx

from nika_tui.domain.tenant import Provider
from nika_tui.errors import ProviderError
from nika_tui.scale.providers.base import Instance, WorkerSpec, named_instance, worker_tags
from nika_tui.scale.providers.http import (
    CloudHttp,
    ErrorInfo,
    json_error,
    provider_error,
    status_kind,
    status_only,
)
from nika_tui.scale.providers.oauth import fetch_token

BASE_URL = "https://management.azure.com"
LOGIN_URL = "https://login.microsoftonline.com"
API_VERSION = "2024-07-01"

_KINDS = {
    "AuthenticationFailed": "auth",
    "InvalidAuthenticationToken": "auth",
    "ExpiredAuthenticationToken": "auth",
    "AuthorizationFailed": "auth",
    "OperationNotAllowed": "quota",
    "QuotaExceeded": "quota",
    "SkuNotAvailable": "region",
    "LocationNotAvailableForResourceType": "region",
    "NoRegisteredProviderFound": "region",
    "ResourceNotFound": "notfound",
    "NotFound": "notfound",
    "TooManyRequests": "rate",
}


def parse_error(resp: httpx.Response) -> ErrorInfo:
    """``(kind, code, message)`` from an ARM error body."""
    error = json_error(resp).get("error")
    if not isinstance(error, dict):
        return status_only(resp)
    code = str(error.get("code", f"HTTP {resp.status_code}"))
    return _KINDS.get(code, status_kind(resp.status_code)), code, str(error.get("message", ""))


class Azure:
    """Azure virtual-machines adapter.

    Args:
        secrets: ``tenant_id``, ``client_id``, ``client_secret``.
        subscription_id: The subscription.
        resource_group: The resource group the workers go into.
        subnet_id: Full ARM id of the subnet the workers' NICs attach to.
        base_url: ARM base (a local stand-in in tests).
        login_url: Identity platform base (defaults to Microsoft's; same stand-in in tests).
        http: The HTTP layer; one is made when omitted.
    """

    provider = Provider.AZURE

    def __init__(
        self,
        secrets: Mapping[str, str],
        subscription_id: str,
        resource_group: str,
        subnet_id: str,
        base_url: str = BASE_URL,
        login_url: str | None = None,
        http: CloudHttp | None = None,
    ) -> None:
        self._secrets = dict(secrets)
        self._vms = (
            f"{base_url.rstrip('/')}/subscriptions/{subscription_id}/resourceGroups/"
            f"{resource_group}/providers/Microsoft.Compute/virtualMachines"
        )
        self._login = (login_url or (LOGIN_URL if base_url == BASE_URL else base_url)).rstrip("/")
        self.subnet_id = subnet_id
        self.http = http or CloudHttp(self.provider, parse_error)
        self.http.secrets = tuple(secrets.values())
        self._token: str | None = None

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        if self._token is None:
            self._token = fetch_token(
                self.http,
                f"{self._login}/{self._secrets['tenant_id']}/oauth2/v2.0/token",
                {
                    "grant_type": "client_credentials",
                    "client_id": self._secrets["client_id"],
                    "client_secret": self._secrets["client_secret"],
                    "scope": "https://management.azure.com/.default",
                },
            )
        params = {"api-version": API_VERSION}
        headers = {"Authorization": f"Bearer {self._token}"}
        url = f"{self._vms}{path}"
        return self.http.send(method, url, params=params, headers=headers, **kwargs)

    def _body(self, spec: WorkerSpec) -> dict[str, Any]:
        publisher, offer, sku, version = ([*spec.image.split(":"), "", "", ""])[:4]
        return {
            "location": spec.region,
            "tags": worker_tags(spec.tenant_id, spec.plan_id),
            "properties": {
                "hardwareProfile": {"vmSize": spec.instance_type},
                "storageProfile": {
                    "imageReference": {
                        "publisher": publisher,
                        "offer": offer,
                        "sku": sku,
                        "version": version or "latest",
                    },
                    "osDisk": {"createOption": "FromImage", "deleteOption": "Delete"},
                },
                "osProfile": {
                    "computerName": spec.name,
                    "adminUsername": "nika",
                    "customData": base64.b64encode(spec.user_data.encode()).decode(),
                    "linuxConfiguration": {"disablePasswordAuthentication": True},
                },
                "networkProfile": {
                    "networkApiVersion": "2022-11-01",
                    "networkInterfaceConfigurations": [
                        {
                            "name": f"{spec.name}-nic",
                            "properties": {
                                "primary": True,
                                "deleteOption": "Delete",
                                "ipConfigurations": [
                                    {
                                        "name": "ipconfig1",
                                        "properties": {"subnet": {"id": self.subnet_id}},
                                    }
                                ],
                            },
                        }
                    ],
                },
            },
        }

    def create(self, spec: WorkerSpec) -> Instance:
        """PUT one VM; a VM that ARM reports as Failed is deleted before the error is raised."""
        vm = self._send("PUT", f"/{spec.name}", json=self._body(spec)).json()
        state = str(vm.get("properties", {}).get("provisioningState", ""))
        if state == "Failed":
            with contextlib.suppress(ProviderError):
                self.delete(spec.name)
            raise provider_error(
                self.provider,
                "other",
                "ProvisioningFailed",
                f"virtual machine {spec.name} failed to provision",
            )
        return Instance(
            self.provider,
            str(vm.get("name", spec.name)),
            spec.name,
            spec.tenant_id,
            spec.plan_id,
            state or "Creating",
        )

    def list(self) -> list[Instance]:
        """Every VM of the resource group tagged ``nika-managed`` (follows ``nextLink``)."""
        out: list[Instance] = []
        body = self._send("GET", "").json()
        while True:
            for vm in body.get("value", []):
                state = str(vm.get("properties", {}).get("provisioningState", ""))
                found = named_instance(self.provider, str(vm["name"]), vm.get("tags") or {}, state)
                out += [found] if found else []
            link = body.get("nextLink")
            if not link:
                return out
            body = self.http.send(
                "GET", str(link), headers={"Authorization": f"Bearer {self._token}"}
            ).json()

    def delete(self, instance_id: str) -> None:
        """Delete the VM (its NIC and OS disk go with it); gone already is fine."""
        self._send("DELETE", f"/{instance_id}", ok_missing=True)
