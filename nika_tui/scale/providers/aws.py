"""AWS EC2 Query API (``Action=RunInstances|DescribeInstances|TerminateInstances``), SigV4.

Every call is a form ``POST /`` to ``https://ec2.{region}.amazonaws.com`` signed with Signature
Version 4 (service ``ec2``). ``RunInstances`` carries ``ClientToken={plan_id}``: EC2 itself
makes a repeated create of the same plan return the same instance, and ``TagSpecification``
tags the instance in the same call (nothing untagged ever exists). Answers and errors are XML
(``<Response><Errors><Error><Code>…``); EC2 throttles with ``RequestLimitExceeded`` (HTTP 503).
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Callable, Mapping
from urllib.parse import urlencode
from xml.etree import ElementTree

import httpx

from nika_tui.domain.tenant import Provider
from nika_tui.scale.providers.base import (
    MANAGED_TAG,
    PLAN_TAG,
    TENANT_TAG,
    Instance,
    WorkerSpec,
    worker_tags,
)
from nika_tui.scale.providers.http import (
    CloudHttp,
    ErrorInfo,
    provider_error,
    status_kind,
    status_only,
)
from nika_tui.services.provider_verify import sigv4_headers

API_VERSION = "2016-11-15"

_KINDS = {
    "AuthFailure": "auth",
    "UnauthorizedOperation": "auth",
    "InvalidClientTokenId": "auth",
    "SignatureDoesNotMatch": "auth",
    "InstanceLimitExceeded": "quota",
    "VcpuLimitExceeded": "quota",
    "MaxSpotInstanceCountExceeded": "quota",
    "InsufficientInstanceCapacity": "region",
    "Unsupported": "region",
    "OptInRequired": "region",
    "InvalidAMIID.NotFound": "region",
    "InvalidInstanceID.NotFound": "notfound",
    "RequestLimitExceeded": "rate",
    "Throttling": "rate",
}


def _strip_ns(root: ElementTree.Element) -> ElementTree.Element:
    for element in root.iter():
        element.tag = element.tag.rpartition("}")[2]
    return root


def parse_error(resp: httpx.Response) -> ErrorInfo:
    """``(kind, Code, Message)`` from an EC2 ``<Response><Errors>`` body."""
    try:
        root = _strip_ns(ElementTree.fromstring(resp.content))
    except ElementTree.ParseError:
        return status_only(resp)
    code = root.findtext(".//Error/Code") or f"HTTP {resp.status_code}"
    message = root.findtext(".//Error/Message") or ""
    return _KINDS.get(code, status_kind(resp.status_code)), code, message


def _instance(item: ElementTree.Element) -> Instance:
    tags = {
        (tag.findtext("key") or ""): (tag.findtext("value") or "")
        for tag in item.findall("tagSet/item")
    }
    return Instance(
        Provider.AWS,
        item.findtext("instanceId") or "",
        tags.get("Name", ""),
        tags.get(TENANT_TAG),
        tags.get(PLAN_TAG),
        item.findtext("instanceState/name") or "",
    )


class Ec2:
    """EC2 adapter.

    Args:
        secrets: ``access_key_id``, ``secret_access_key``.
        region: e.g. ``eu-west-3``.
        base_url: Endpoint (default ``https://ec2.{region}.amazonaws.com``; a stand-in in tests).
        http: The HTTP layer; one is made when omitted.
        now: UTC clock for the signature.
    """

    provider = Provider.AWS

    def __init__(
        self,
        secrets: Mapping[str, str],
        region: str,
        base_url: str | None = None,
        http: CloudHttp | None = None,
        now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    ) -> None:
        self._key = secrets["access_key_id"]
        self._secret = secrets["secret_access_key"]
        self.region = region
        self._url = f"{(base_url or f'https://ec2.{region}.amazonaws.com').rstrip('/')}/"
        self.http = http or CloudHttp(self.provider, parse_error)
        self.http.secrets = tuple(secrets.values())
        self._now = now

    def _call(
        self, action: str, params: Mapping[str, str], ok_missing: bool = False
    ) -> ElementTree.Element:
        body = urlencode({"Action": action, "Version": API_VERSION, **params})
        headers = sigv4_headers(
            self._key,
            self._secret,
            self._url,
            body,
            self._now(),
            region=self.region,
            service="ec2",
        )
        resp = self.http.send(
            "POST", self._url, content=body.encode(), headers=headers, ok_missing=ok_missing
        )
        return _strip_ns(ElementTree.fromstring(resp.content or b"<Empty/>"))

    def create(self, spec: WorkerSpec) -> Instance:
        """RunInstances with tags and ``ClientToken`` (idempotent on EC2's side too)."""
        params = {
            "ImageId": spec.image,
            "InstanceType": spec.instance_type,
            "MinCount": "1",
            "MaxCount": "1",
            "ClientToken": spec.plan_id,
            "UserData": base64.b64encode(spec.user_data.encode()).decode(),
            "TagSpecification.1.ResourceType": "instance",
        }
        tags = {**worker_tags(spec.tenant_id, spec.plan_id), "Name": spec.name}
        for n, (key, value) in enumerate(tags.items(), start=1):
            params[f"TagSpecification.1.Tag.{n}.Key"] = key
            params[f"TagSpecification.1.Tag.{n}.Value"] = value
        if subnet := spec.settings.get("subnet_id"):
            params["SubnetId"] = subnet
        root = self._call("RunInstances", params)
        item = root.find("instancesSet/item")
        if item is None:
            raise provider_error(
                self.provider, "other", "RunInstances", "answered without an instance"
            )
        found = _instance(item)
        return Instance(
            self.provider,
            found.instance_id,
            spec.name,
            spec.tenant_id,
            spec.plan_id,
            found.state or "pending",
        )

    def list(self) -> list[Instance]:
        """Every live instance carrying the ``nika-managed`` tag key (follows NextToken)."""
        params = {
            "Filter.1.Name": "tag-key",
            "Filter.1.Value.1": MANAGED_TAG,
            "Filter.2.Name": "instance-state-name",
            "Filter.2.Value.1": "pending",
            "Filter.2.Value.2": "running",
            "Filter.2.Value.3": "stopping",
            "Filter.2.Value.4": "stopped",
        }
        out: list[Instance] = []
        while True:
            root = self._call("DescribeInstances", params)
            out += [_instance(i) for i in root.findall("reservationSet/item/instancesSet/item")]
            token = root.findtext("nextToken")
            if not token:
                return out
            params = {**params, "NextToken": token}

    def delete(self, instance_id: str) -> None:
        """TerminateInstances; an unknown id is fine."""
        self._call("TerminateInstances", {"InstanceId.1": instance_id}, ok_missing=True)
