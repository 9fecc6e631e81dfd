"""One local HTTP server speaking six cloud APIs the way their documentation says (issue 18).

Scaleway Instances, Contabo, Azure Resource Manager (+ the identity platform's token endpoint),
Google Compute Engine (+ the OAuth2 JWT-bearer token endpoint), the EC2 Query API (SigV4 checked
by recomputing the signature with the secret it knows) and RunPod REST. It accepts only the
credentials of :mod:`tests.fake_providers`, keeps instances in memory, answers refusals with each
provider's documented error body, enforces an instance quota per provider (``QUOTA``) and a set
of valid regions, and can be told to answer the next matching request with anything (``fail``),
e.g. a 429 with ``Retry-After``, or hold it until the test releases it (``hold``: a create
caught mid-flight). ``requests`` records every (method, path) it served.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import jwt

from nika_tui.services.provider_verify import sigv4_headers
from tests.fake_providers import AWS, AZ, CNTB, KEY, RUNPOD, SCW

QUOTA = 2
REGIONS = {
    "scaleway": {"fr-par-1", "fr-par-2", "nl-ams-1"},
    "contabo": {"EU", "US-central", "SIN"},
    "azure": {"westeurope", "francecentral"},
    "gcp": {"europe-west4-a", "us-central1-a"},
    "aws": {"eu-west-3", "us-east-1"},
    "runpod": {"NVIDIA L4", "NVIDIA RTX A4000"},  # GPU types in stock
}
_UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
_EC2_NS = "http://ec2.amazonaws.com/doc/2016-11-15/"


@dataclass
class Fault:
    """Answer the next ``times`` requests matching ``method`` + ``path`` regex with this."""

    method: str
    path: str
    status: int
    body: bytes = b"{}"
    headers: dict[str, str] = field(default_factory=dict)
    times: int = 1


@dataclass
class Hold:
    """The next request matching ``method`` + ``path`` waits for :attr:`release` (at most
    ``HOLD_MAX_S``); :attr:`arrived` is set when it is waiting."""

    method: str
    path: str
    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


HOLD_MAX_S = 60.0


@dataclass
class CloudState:
    instances: dict[str, dict[str, dict[str, Any]]] = field(
        default_factory=lambda: {p: {} for p in REGIONS}
    )
    tokens: dict[str, set[str]] = field(default_factory=lambda: {p: set() for p in REGIONS})
    faults: list[Fault] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)
    client_tokens: dict[str, str] = field(default_factory=dict)
    holds: list[Hold] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def hold(self, method: str, path: str) -> Hold:
        """Hold the next request matching ``method`` + ``path`` regex until released."""
        held = Hold(method, path)
        with self.lock:
            self.holds.append(held)
        return held

    def fail(self, method: str, path: str, status: int, body: Any = None, **kw: Any) -> None:
        """Queue a fault (``body`` a dict → JSON, str → as is)."""
        raw = body.encode() if isinstance(body, str) else json.dumps(body or {}).encode()
        self.faults.append(Fault(method, path, status, raw, **kw))


class _Handler(BaseHTTPRequestHandler):
    state: CloudState

    def log_message(self, *args: object) -> None:
        pass

    # --- plumbing -------------------------------------------------------------------------
    def _send(self, code: int, body: bytes, ctype: str, headers: dict[str, str] | None = None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, code: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self._send(code, data, "application/json", headers)

    def _xml(self, code: int, body: str) -> None:
        self._send(code, body.encode(), "text/xml;charset=UTF-8")

    def _bearer(self, provider: str) -> bool:
        auth = self.headers.get("Authorization", "")
        return auth.startswith("Bearer ") and auth[7:] in self.state.tokens[provider]

    def _handle(self, method: str) -> None:
        url = urlparse(self.path)
        self.query = {k: v[0] for k, v in parse_qs(url.query).items()}
        length = int(self.headers.get("Content-Length", 0))
        self.body = self.rfile.read(length)
        with self.state.lock:
            held = next(
                (h for h in self.state.holds if h.method == method and re.search(h.path, url.path)),
                None,
            )
            if held is not None:
                self.state.holds.remove(held)
        if held is not None:  # waits outside the lock: other requests go on meanwhile
            held.arrived.set()
            held.release.wait(HOLD_MAX_S)
        with self.state.lock:
            self.state.requests.append((method, url.path))
            for fault in self.state.faults:
                if fault.method == method and re.search(fault.path, url.path) and fault.times:
                    fault.times -= 1
                    return self._send(fault.status, fault.body, "application/json", fault.headers)
            for prefix, route in _ROUTES:
                if url.path.startswith(prefix) or re.match(prefix, url.path):
                    return route(self, method, url.path)
        return self._json(404, {"message": "no such route"})

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def _form(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(self.body.decode()).items()}

    # --- token endpoints ------------------------------------------------------------------
    def contabo_token(self, method: str, path: str) -> None:
        form = self._form()
        ok = (
            form.get("grant_type") == "password"
            and form.get("client_secret") == CNTB["client_secret"]
            and form.get("password") == CNTB["password"]
        )
        if not ok:
            return self._json(401, {"error": "invalid_client", "error_description": "bad"})
        return self._issue("contabo")

    def _issue(self, provider: str) -> None:
        token = uuid.uuid4().hex
        self.state.tokens[provider].add(token)
        return self._json(200, {"access_token": token, "expires_in": 300, "token_type": "Bearer"})

    def azure_token(self, method: str, path: str) -> None:
        form = self._form()
        ok = (
            path == f"/{AZ['tenant_id']}/oauth2/v2.0/token"
            and form.get("client_secret") == AZ["client_secret"]
            and form.get("scope") == "https://management.azure.com/.default"
        )
        if not ok:
            body = {"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client"}
            return self._json(400, body)
        return self._issue("azure")

    def gcp_token(self, method: str, path: str) -> None:
        form = self._form()
        try:
            claims = jwt.decode(
                form.get("assertion", ""),
                KEY.public_key(),
                algorithms=["RS256"],
                audience=f"http://{self.headers['Host']}/token",
            )
        except jwt.PyJWTError:
            return self._json(400, {"error": "invalid_grant", "error_description": "Invalid JWT"})
        if "auth/compute" not in str(claims.get("scope")):
            return self._json(400, {"error": "invalid_scope"})
        return self._issue("gcp")

    # --- Scaleway -------------------------------------------------------------------------
    def scaleway(self, method: str, path: str) -> None:
        if self.headers.get("X-Auth-Token") != SCW["secret_key"]:
            body = {"message": "authentication is denied", "type": "denied_authentication"}
            return self._json(401, body)
        m = re.match(r"^/instance/v1/zones/([^/]+)/servers(?:/([^/]+))?(/.*)?$", path)
        if not m:
            return self._json(404, {"type": "not_found", "message": "route"})
        zone, sid, rest = m.groups()
        if zone not in REGIONS["scaleway"]:
            return self._json(
                400, {"type": "invalid_arguments", "message": f"zone {zone} is not a valid zone"}
            )
        servers = self.state.instances["scaleway"]
        if sid and sid not in servers:
            body = {"type": "unknown_resource", "message": '"instance_server" not found'}
            return self._json(404, body)
        if method == "POST" and not sid:
            if len(servers) >= QUOTA:
                return self._json(
                    403, {"type": "quotas_exceeded", "message": "Quotas exceeded: instances_dev1_m"}
                )
            req = json.loads(self.body)
            new = {
                "id": str(uuid.uuid4()),
                "name": req["name"],
                "state": "stopped",
                "tags": req.get("tags", []),
                "commercial_type": req["commercial_type"],
            }
            servers[new["id"]] = new
            return self._json(201, {"server": new})
        if method == "GET" and not sid:
            tag = self.query.get("tags")
            found = [s for s in servers.values() if tag is None or tag in s["tags"]]
            return self._json(200, {"servers": found})
        if method == "PATCH" and rest == "/user_data/cloud-init":
            servers[sid]["user_data"] = self.body.decode()
            return self._json(204)
        if method == "POST" and rest == "/action":
            action = json.loads(self.body)["action"]
            if action == "terminate":
                del servers[sid]
            else:
                servers[sid]["state"] = "starting"
            return self._json(202, {"task": {"id": str(uuid.uuid4()), "status": "pending"}})
        if method == "DELETE" and rest is None:
            if servers[sid]["state"] != "stopped":
                return self._json(400, {"type": "precondition_failed", "message": "running"})
            del servers[sid]
            return self._json(204)
        return self._json(404, {"type": "not_found", "message": "route"})

    # --- Contabo --------------------------------------------------------------------------
    def contabo(self, method: str, path: str) -> None:
        if not self._bearer("contabo"):
            return self._json(401, {"statusCode": 401, "message": "Unauthorized"})
        if not _UUID4.match(self.headers.get("x-request-id", "")):
            return self._json(400, {"statusCode": 400, "message": "x-request-id must be a UUID4"})
        instances = self.state.instances["contabo"]
        m = re.match(r"^/v1/compute/instances(?:/(\d+)/cancel)?$", path)
        if not m:
            return self._json(404, {"statusCode": 404, "message": "Not Found"})
        if m.group(1):
            if m.group(1) not in instances:
                return self._json(404, {"statusCode": 404, "message": "Entry Instance not found"})
            instances[m.group(1)]["cancelDate"] = dt.date.today().isoformat()
            return self._json(200, {"data": [{"instanceId": int(m.group(1)), "cancelDate": "x"}]})
        if method == "GET":
            items = [
                i
                for i in instances.values()
                if self.query.get("displayName", "") in i["displayName"]
            ]
            page = {"size": 100, "totalElements": len(items), "totalPages": 1, "page": 1}
            return self._json(200, {"_pagination": page, "data": items, "_links": {}})
        req = json.loads(self.body)
        if req["region"] not in REGIONS["contabo"]:
            msg = f"region {req['region']} is not available for product {req['productId']}"
            return self._json(400, {"statusCode": 400, "message": msg})
        if len([i for i in instances.values() if not i.get("cancelDate")]) >= QUOTA:
            msg = "instance limit reached for this customer"
            return self._json(403, {"statusCode": 403, "message": msg})
        new_id = str(100 + len(instances))
        instances[new_id] = {
            "instanceId": int(new_id),
            "displayName": req["displayName"],
            "status": "provisioning",
            "productId": req["productId"],
        }
        return self._json(201, {"data": [instances[new_id]], "_links": {}})

    # --- Azure ----------------------------------------------------------------------------
    def azure(self, method: str, path: str) -> None:
        if not self._bearer("azure"):
            return self._json(
                401,
                {
                    "error": {
                        "code": "InvalidAuthenticationToken",
                        "message": "The access token is invalid.",
                    }
                },
            )
        if self.query.get("api-version") != "2024-07-01":
            return self._json(
                400,
                {
                    "error": {
                        "code": "MissingApiVersionParameter",
                        "message": "api-version is required",
                    }
                },
            )
        vms = self.state.instances["azure"]
        name = path.rsplit("/virtualMachines", 1)[1].strip("/")
        if method == "GET" and not name:
            return self._json(200, {"value": list(vms.values())})
        if method == "DELETE":
            if vms.pop(name, None) is None:
                return self._json(204)
            return self._json(202, None, {"Location": f"/operations/{uuid.uuid4().hex}"})
        if method == "PUT":
            req = json.loads(self.body)
            if req["location"] not in REGIONS["azure"]:
                size = req["properties"]["hardwareProfile"]["vmSize"]
                return self._json(
                    409,
                    {
                        "error": {
                            "code": "SkuNotAvailable",
                            "message": f"VM size {size} is not available in {req['location']}.",
                        }
                    },
                )
            if len(vms) >= QUOTA:
                return self._json(
                    409,
                    {
                        "error": {
                            "code": "OperationNotAllowed",
                            "message": "Operation results in exceeding approved "
                            "standardDSv5Family Cores quota.",
                        }
                    },
                )
            nic = req["properties"]["networkProfile"]["networkInterfaceConfigurations"][0]
            assert nic["properties"]["deleteOption"] == "Delete"
            vms[name] = {
                "name": name,
                "location": req["location"],
                "tags": req["tags"],
                "properties": {"provisioningState": "Creating"},
            }
            return self._json(201, vms[name])
        return self._json(404, {"error": {"code": "NotFound", "message": "route"}})

    # --- Google Compute Engine ------------------------------------------------------------
    def gcp(self, method: str, path: str) -> None:
        if not self._bearer("gcp"):
            return self._json(
                401,
                {
                    "error": {
                        "code": 401,
                        "status": "UNAUTHENTICATED",
                        "message": "Request had invalid authentication credentials.",
                        "errors": [{"reason": "authError", "domain": "global"}],
                    }
                },
            )
        m = re.match(r"^/compute/v1/projects/([^/]+)/zones/([^/]+)/instances(?:/([^/]+))?$", path)
        if not m or m.group(1) != "acme":
            return self._json(
                403,
                {
                    "error": {
                        "code": 403,
                        "status": "PERMISSION_DENIED",
                        "message": "Required 'compute.instances.create' permission",
                        "errors": [{"reason": "forbidden"}],
                    }
                },
            )
        project, zone, name = m.groups()
        if zone not in REGIONS["gcp"]:
            msg = f"The resource 'projects/{project}/zones/{zone}' was not found"
            return self._json(
                404,
                {
                    "error": {
                        "code": 404,
                        "message": msg,
                        "errors": [{"reason": "notFound", "message": msg}],
                    }
                },
            )
        items = self.state.instances["gcp"]
        op = {
            "kind": "compute#operation",
            "name": f"operation-{uuid.uuid4().hex}",
            "status": "RUNNING",
            "zone": zone,
        }
        if method == "GET":
            wanted = self.query.get("filter", "")
            found = [
                i
                for i in items.values()
                if wanted == "labels.nika-managed=true"
                and i["labels"].get("nika-managed") == "true"
            ]
            return self._json(
                200, {"kind": "compute#instanceList", **({"items": found} if found else {})}
            )
        if method == "DELETE":
            if items.pop(name or "", None) is None:
                msg = (
                    f"The resource 'projects/{project}/zones/{zone}/instances/{name}' was not found"
                )
                return self._json(
                    404,
                    {"error": {"code": 404, "message": msg, "errors": [{"reason": "notFound"}]}},
                )
            return self._json(200, {**op, "operationType": "delete"})
        req = json.loads(self.body)
        if len(items) >= QUOTA:
            msg = "Quota 'CPUS' exceeded. Limit: 8.0 in region europe-west4."
            return self._json(
                403,
                {
                    "error": {
                        "code": 403,
                        "message": msg,
                        "errors": [
                            {"reason": "quotaExceeded", "domain": "usageLimits", "message": msg}
                        ],
                    }
                },
            )
        items[req["name"]] = {
            "name": req["name"],
            "labels": req["labels"],
            "status": "PROVISIONING",
            "machineType": req["machineType"],
        }
        return self._json(200, {**op, "operationType": "insert"})

    # --- AWS EC2 ----------------------------------------------------------------------------
    def _ec2_error(self, status: int, code: str, message: str) -> None:
        self._xml(
            status,
            f"<?xml version='1.0' encoding='UTF-8'?><Response><Errors><Error>"
            f"<Code>{code}</Code><Message>{message}</Message></Error></Errors>"
            f"<RequestID>{uuid.uuid4()}</RequestID></Response>",
        )

    def aws(self, method: str, path: str) -> None:
        body = self.body.decode()
        form = self._form()
        auth = self.headers.get("Authorization", "")
        m = re.match(
            r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request", auth
        )
        if not m or m.group(1) != AWS["access_key_id"]:
            return self._ec2_error(
                401, "AuthFailure", "AWS was not able to validate the provided access credentials"
            )
        region, service = m.group(3), m.group(4)
        when = dt.datetime.strptime(self.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ")
        expected = sigv4_headers(
            AWS["access_key_id"],
            AWS["secret_access_key"],
            f"http://{self.headers['Host']}/",
            body,
            when,
            region=region,
            service=service,
        )["Authorization"]
        if auth != expected or service != "ec2":
            return self._ec2_error(
                403,
                "SignatureDoesNotMatch",
                "The request signature we calculated does not match the signature you provided.",
            )
        if region not in REGIONS["aws"]:
            return self._ec2_error(
                401, "OptInRequired", "You are not subscribed to this service in this region."
            )
        instances = self.state.instances["aws"]
        action = form.get("Action")
        if action == "RunInstances":
            token = form.get("ClientToken", "")
            if token in self.state.client_tokens:
                iid = self.state.client_tokens[token]
            else:
                live = [i for i in instances.values() if i["state"] != "terminated"]
                if len(live) >= QUOTA:
                    return self._ec2_error(
                        400,
                        "InstanceLimitExceeded",
                        f"You have requested more instances than your current limit of {QUOTA}",
                    )
                iid = f"i-{uuid.uuid4().hex[:17]}"
                tags = {
                    form[k]: form[k.replace(".Key", ".Value")]
                    for k in form
                    if k.startswith("TagSpecification.1.Tag.") and k.endswith(".Key")
                }
                instances[iid] = {
                    "id": iid,
                    "tags": tags,
                    "state": "pending",
                    "type": form["InstanceType"],
                }
                self.state.client_tokens[token] = iid
            return self._xml(
                200,
                f'<RunInstancesResponse xmlns="{_EC2_NS}"><requestId>r'
                f"</requestId><instancesSet>{_ec2_item(instances[iid])}"
                f"</instancesSet></RunInstancesResponse>",
            )
        if action == "DescribeInstances":
            key = form.get("Filter.1.Value.1", "")
            live = [
                i for i in instances.values() if key in i["tags"] and i["state"] != "terminated"
            ]
            items = "".join(
                f"<item><instancesSet>{_ec2_item(i)}</instancesSet></item>" for i in live
            )
            return self._xml(
                200,
                f'<DescribeInstancesResponse xmlns="{_EC2_NS}"><reservationSet>'
                f"{items}</reservationSet></DescribeInstancesResponse>",
            )
        if action == "TerminateInstances":
            iid = form.get("InstanceId.1", "")
            if iid not in instances:
                return self._ec2_error(
                    400, "InvalidInstanceID.NotFound", f"The instance ID '{iid}' does not exist"
                )
            instances[iid]["state"] = "terminated"
            return self._xml(
                200,
                f'<TerminateInstancesResponse xmlns="{_EC2_NS}">'
                "<instancesSet/></TerminateInstancesResponse>",
            )
        return self._ec2_error(400, "InvalidAction", f"The action {action} is not valid")

    # --- RunPod -----------------------------------------------------------------------------
    def runpod(self, method: str, path: str) -> None:
        if self.headers.get("Authorization") != f"Bearer {RUNPOD['api_key']}":
            return self._json(401, {"error": "Unauthorized", "status": 401})
        pods = self.state.instances["runpod"]
        pod_id = path.removeprefix("/v1/pods").strip("/")
        if method == "GET":
            return self._json(200, list(pods.values()))
        if method == "DELETE":
            if pods.pop(pod_id, None) is None:
                return self._json(404, {"error": "pod not found", "status": 404})
            return self._json(204)
        req = json.loads(self.body)
        if not set(req["gpuTypeIds"]) & REGIONS["runpod"]:
            return self._json(
                400,
                {
                    "error": "There are no longer any instances available "
                    "with the requested specifications.",
                    "status": 400,
                },
            )
        if len(pods) >= QUOTA:
            return self._json(
                402, {"error": "Insufficient balance to start this pod", "status": 402}
            )
        new = {
            "id": uuid.uuid4().hex[:14],
            "name": req["name"],
            "desiredStatus": "RUNNING",
            "env": req.get("env", {}),
            "dockerStartCmd": req.get("dockerStartCmd", []),
        }
        pods[new["id"]] = new
        return self._json(201, new)


def _ec2_item(i: dict[str, Any]) -> str:
    tags = "".join(f"<item><key>{k}</key><value>{v}</value></item>" for k, v in i["tags"].items())
    return (
        f"<item><instanceId>{i['id']}</instanceId><instanceType>{i['type']}</instanceType>"
        f"<instanceState><code>0</code><name>{i['state']}</name></instanceState>"
        f"<tagSet>{tags}</tagSet></item>"
    )


_ROUTES = [
    ("/auth/realms/contabo/", _Handler.contabo_token),
    (r"^/[0-9a-f-]+/oauth2/v2.0/token$", _Handler.azure_token),
    (r"^/token$", _Handler.gcp_token),
    ("/instance/v1/", _Handler.scaleway),
    ("/v1/compute/", _Handler.contabo),
    ("/subscriptions/", _Handler.azure),
    ("/compute/v1/", _Handler.gcp),
    ("/v1/pods", _Handler.runpod),
    (r"^/$", _Handler.aws),
]


@contextmanager
def fake_clouds() -> Iterator[tuple[str, CloudState]]:
    """Serve the six APIs on 127.0.0.1 (a free port); yield its base URL and its state."""
    state = CloudState()
    handler = type("Handler", (_Handler,), {"state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()
