"""RunPod REST API (``https://rest.runpod.io/v1/pods``), ``Authorization: Bearer`` auth.

A pod has no tags: its name carries the markers (``nika-{tenant}--{plan}``) and its env carries
``NIKA_MANAGED=true``. A pod is a container without cloud-init or systemd: its user data is
the bash start script of :mod:`nika_tui.scale.container_start` (decision 510), base64-encoded
in ``NIKA_BOOTSTRAP``; the start command writes it to a file and ``exec``s it, so the script
(and the worker it runs) gets the pod's SIGTERM.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import httpx

from nika_tui.domain.tenant import Provider
from nika_tui.scale.container_start import SECRET_ENV, SECRET_REF
from nika_tui.scale.providers.base import Instance, WorkerSpec, parse_worker_name
from nika_tui.scale.providers.http import CloudHttp, ErrorInfo, json_error, status_kind

BASE_URL = "https://rest.runpod.io"

START_CMD = (
    'umask 077 && echo "$NIKA_BOOTSTRAP" | base64 -d > /root/nika-start.sh'
    " && exec bash /root/nika-start.sh"
)
"""The pod's start command: the script runs as the container's main process."""

_CAPACITY = ("no longer any instances available", "not enough", "unavailable")


def parse_error(resp: httpx.Response) -> ErrorInfo:
    """``(kind, code, message)`` from a RunPod error body (``{"error": ...}``)."""
    body = json_error(resp)
    message = str(body.get("error") or body.get("message") or resp.reason_phrase)
    kind = status_kind(resp.status_code)
    lowered = message.lower()
    if resp.status_code == 402 or "insufficient" in lowered or "balance" in lowered:
        kind = "quota"
    elif any(word in lowered for word in _CAPACITY):
        kind = "region"
    return kind, f"HTTP {resp.status_code}", message


class RunPod:
    """RunPod pods adapter.

    Args:
        secrets: ``api_key``.
        cloud_type: ``SECURE`` or ``COMMUNITY``.
        base_url: API base (a local stand-in in tests).
        http: The HTTP layer; one is made when omitted.
    """

    provider = Provider.RUNPOD

    def __init__(
        self,
        secrets: Mapping[str, str],
        cloud_type: str = "SECURE",
        base_url: str = BASE_URL,
        http: CloudHttp | None = None,
    ) -> None:
        self._headers = {"Authorization": f"Bearer {secrets['api_key']}"}
        self._base = f"{base_url.rstrip('/')}/v1"
        self.cloud_type = cloud_type
        self.http = http or CloudHttp(self.provider, parse_error)
        self.http.secrets = tuple(secrets.values())

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self.http.send(method, f"{self._base}{path}", headers=self._headers, **kwargs)

    def create(self, spec: WorkerSpec) -> Instance:
        """Create one pod (RunPod creates it in one call: nothing half-made on refusal)."""
        bootstrap = base64.b64encode(spec.user_data.encode()).decode()
        body = {
            "name": spec.name,
            "imageName": spec.image,
            "gpuTypeIds": [spec.instance_type],
            "gpuCount": 1,
            "cloudType": self.cloud_type,
            "containerDiskInGb": 20,
            "env": {"NIKA_MANAGED": "true", "NIKA_BOOTSTRAP": bootstrap, SECRET_ENV: SECRET_REF},
            "dockerStartCmd": ["bash", "-c", START_CMD],
        }
        if spec.region:
            body["dataCenterIds"] = [spec.region]
        pod = self._send("POST", "/pods", json=body).json()
        return Instance(
            self.provider,
            str(pod["id"]),
            spec.name,
            spec.tenant_id,
            spec.plan_id,
            str(pod.get("desiredStatus", "")),
        )

    def list(self) -> list[Instance]:
        """Every pod whose name nika gave it."""
        out: list[Instance] = []
        for pod in self._send("GET", "/pods").json():
            parsed = parse_worker_name(str(pod.get("name", "")))
            if parsed is None:
                continue
            out.append(
                Instance(
                    self.provider,
                    str(pod["id"]),
                    str(pod["name"]),
                    parsed[0],
                    parsed[1],
                    str(pod.get("desiredStatus", "")),
                )
            )
        return out

    def delete(self, instance_id: str) -> None:
        """Terminate the pod; gone already is fine."""
        self._send("DELETE", f"/pods/{instance_id}", ok_missing=True)
