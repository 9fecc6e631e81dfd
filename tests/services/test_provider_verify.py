"""Online checks against a local HTTP server that answers like each provider's API."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from nika_tui.domain.tenant import Privacy, Provider
from nika_tui.services.provider_verify import (
    Endpoints,
    VerifyStatus,
    verify_provider,
    verify_providers,
)

SCW = {"access_key": "SCWABCDEFGHIJ1234567", "secret_key": "1b4e28ba-2fa1-11d2-883f-0016d3cca427"}
AWS = {"access_key_id": "AKIAIOSFODNN7EXAMPLE", "secret_access_key": "w" * 40}
AZ = {
    "tenant_id": "72f988bf-86f1-41af-91ab-2d7cd011db47",
    "client_id": "1b4e28ba-2fa1-11d2-883f-0016d3cca427",
    "client_secret": "Abc8Q~good-secret",
}
CNTB = {"client_id": "INT-1", "client_secret": "cs-12345678", "user": "a@b.co", "password": "p"}
RUNPOD = {"api_key": "rpa_ABCDEFGHIJKLMNOPQRSTUVWXYZ"}

KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
PEM = KEY.private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
).decode()
GCP = {
    "service_account": json.dumps(
        {
            "type": "service_account",
            "project_id": "acme",
            "private_key_id": "k1",
            "private_key": PEM,
            "client_email": "nika@acme.iam.gserviceaccount.com",
        }
    )
}


class FakeProviders(BaseHTTPRequestHandler):
    """Accepts only the credentials above, like the real APIs do."""

    def log_message(self, *args: object) -> None:
        pass

    def _reply(self, code: int, body: dict[str, object] | None = None) -> None:
        data = json.dumps(body or {}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = urlparse(self.path).path
        if path.startswith("/iam/v1alpha1/api-keys/"):
            ok = path.endswith(SCW["access_key"]) and self.headers["X-Auth-Token"] == SCW["secret_key"]
            return self._reply(200 if ok else 401)
        if path == "/v1/pods":
            ok = self.headers["Authorization"] == f"Bearer {RUNPOD['api_key']}"
            return self._reply(200 if ok else 401)
        return self._reply(404)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
        path = urlparse(self.path).path
        if path.endswith("/openid-connect/token"):
            ok = form.get("password") == CNTB["password"] and form["client_secret"] == CNTB["client_secret"]
            return self._reply(200 if ok else 401, None if ok else {"error": "invalid_client"})
        if path.endswith("/oauth2/v2.0/token"):
            ok = form.get("client_secret") == AZ["client_secret"]
            return self._reply(200 if ok else 400, None if ok else {"error": "invalid_client"})
        if path == "/token":
            try:
                jwt.decode(
                    form["assertion"],
                    KEY.public_key(),
                    algorithms=["RS256"],
                    audience=f"http://{self.headers['Host']}/token",
                )
            except jwt.PyJWTError:
                return self._reply(400, {"error": "invalid_grant"})
            return self._reply(200, {"access_token": "t"})
        if path == "/":
            auth = self.headers.get("Authorization", "")
            ok = f"Credential={AWS['access_key_id']}/" in auth and "Signature=" in auth
            ok = ok and form.get("Action") == "GetCallerIdentity"
            return self._reply(200 if ok else 403)
        return self._reply(404)


@pytest.fixture(scope="module")
def endpoints() -> Iterator[Endpoints]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeProviders)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield Endpoints.local(f"http://127.0.0.1:{server.server_address[1]}")
    server.shutdown()


GOOD = {
    Provider.SCALEWAY: SCW,
    Provider.AWS: AWS,
    Provider.AZURE: AZ,
    Provider.CONTABO: CNTB,
    Provider.RUNPOD: RUNPOD,
    Provider.GCP: GCP,
}


@pytest.mark.parametrize("provider", list(Provider))
def test_valid_credentials_are_accepted(provider: Provider, endpoints: Endpoints) -> None:
    result = verify_provider(provider, GOOD[provider], endpoints=endpoints)
    assert result.status is VerifyStatus.OK, result.detail


def _spoil(provider: Provider) -> dict[str, str]:
    values = dict(GOOD[provider])
    if provider is Provider.GCP:
        other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = other.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        values["service_account"] = values["service_account"].replace(
            json.dumps(PEM)[1:-1], json.dumps(pem)[1:-1]
        )
        return values
    field = {
        Provider.SCALEWAY: "secret_key",
        Provider.AWS: "access_key_id",
        Provider.AZURE: "client_secret",
        Provider.CONTABO: "password",
        Provider.RUNPOD: "api_key",
    }[provider]
    values[field] = values[field][:-1] + ("X" if values[field][-1] != "X" else "Y")
    return values


@pytest.mark.parametrize("provider", list(Provider))
def test_invalid_credentials_are_told_apart(provider: Provider, endpoints: Endpoints) -> None:
    result = verify_provider(provider, _spoil(provider), endpoints=endpoints)
    assert result.status is VerifyStatus.INVALID, result.detail


def test_network_failure_is_not_an_invalid_key() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = verify_provider(Provider.SCALEWAY, SCW, endpoints=Endpoints.local(f"http://127.0.0.1:{port}"))
    assert result.status is VerifyStatus.NETWORK
    assert "key not judged" in result.detail


def test_a_silent_server_times_out_as_network() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)  # accepts the connection, never answers
        port = s.getsockname()[1]
        result = verify_provider(
            Provider.RUNPOD, RUNPOD, endpoints=Endpoints.local(f"http://127.0.0.1:{port}"), timeout=0.3
        )
    assert result.status is VerifyStatus.NETWORK


def test_local_privacy_skips_every_check(endpoints: Endpoints) -> None:
    results = verify_providers({Provider.SCALEWAY: SCW}, Privacy.LOCAL, endpoints=endpoints)
    assert [r.status for r in results] == [VerifyStatus.SKIPPED]


def test_details_never_contain_the_secret(endpoints: Endpoints) -> None:
    for provider in Provider:
        result = verify_provider(provider, _spoil(provider), endpoints=endpoints)
        for value in _spoil(provider).values():
            assert value not in result.detail
