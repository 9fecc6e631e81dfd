"""A local HTTP server answering like each provider's read-only endpoint (for --verify tests).

It accepts only the credentials defined here, the way the real APIs answer: 200, or 401 / 403,
or an OAuth2 ``400 invalid_client`` / ``invalid_grant``.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from nika_tui.services.provider_verify import Endpoints, sigv4_headers

SCW = {"access_key": "SCWABCDEFGHIJ1234567", "secret_key": "1b4e28ba-2fa1-11d2-883f-0016d3cca427"}
AWS = {"access_key_id": "AKIAIOSFODNN7EXAMPLE", "secret_access_key": "w" * 40}
AZ = {
    "tenant_id": "72f988bf-86f1-41af-91ab-2d7cd011db47",
    "client_id": "1b4e28ba-2fa1-11d2-883f-0016d3cca427",
    "client_secret": "Abc8Q~good-secret",
}
CNTB = {"client_id": "INT-1", "client_secret": "cs-12345678", "user": "a@b.co", "password": "p"}
RUNPOD = {"api_key": "rpa_ABCDEFGHIJKLMNOPQRSTUVWXYZ"}

# A test-only key, made once and kept in tests/data: generating a 2048-bit RSA key at import
# cost every collection of the suite ~0.1–0.3 s (issue 12: collection under 3 s).
PEM = (Path(__file__).parent / "data" / "fake_gcp_service_account_key.pem").read_text(
    encoding="ascii"
)
KEY = serialization.load_pem_private_key(PEM.encode(), password=None)
assert isinstance(KEY, rsa.RSAPrivateKey)
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
            ok = (
                path.endswith(SCW["access_key"])
                and self.headers["X-Auth-Token"] == SCW["secret_key"]
            )
            return self._reply(200 if ok else 401)
        if path == "/v1/pods":
            ok = self.headers["Authorization"] == f"Bearer {RUNPOD['api_key']}"
            return self._reply(200 if ok else 401)
        return self._reply(404)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(length).decode()
        form = {k: v[0] for k, v in parse_qs(body).items()}
        path = urlparse(self.path).path
        if path.endswith("/openid-connect/token"):
            ok = (
                form.get("password") == CNTB["password"]
                and form["client_secret"] == CNTB["client_secret"]
            )
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
            # STS recomputes the SigV4 signature with the secret it knows for the key id.
            when = dt.datetime.strptime(self.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ")
            expected = sigv4_headers(
                AWS["access_key_id"],
                AWS["secret_access_key"],
                f"http://{self.headers['Host']}/",
                body,
                when,
            )["Authorization"]
            ok = self.headers.get("Authorization") == expected
            ok = ok and form.get("Action") == "GetCallerIdentity"
            return self._reply(200 if ok else 403)
        return self._reply(404)


@contextmanager
def fake_provider_server() -> Iterator[Endpoints]:
    """Serve :class:`FakeProviders` on 127.0.0.1 (a free port) for the block's duration."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeProviders)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Endpoints.local(f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
