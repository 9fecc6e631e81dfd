"""Local stand-ins for the three gateways, on 127.0.0.1, speaking their documented protocols.

One HTTP server plays every remote side the bridge talks to:

- Meta's Graph API: ``POST /graph/{phone_number_id}/messages`` with the access token;
- the Bot Framework: OpenID metadata (``/botframework/openid``) naming its JWKS
  (``/botframework/keys``, keys endorsing ``msteams``), the token endpoint
  (``/botframework/token``, client credentials) and the connector
  (``/connector/v3/conversations/{id}/activities/{activity}``, bearer token it issued);
- Google Chat's service-account JWKS (``/gchat/jwks``).

It also signs what the gateways send the bridge: WhatsApp's ``X-Hub-Signature-256`` and the
bearer JWTs of Teams and Chat, with RSA keys it publishes. ``fail_next`` makes the next N
outbound calls answer 503, as a gateway having a bad minute does.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

WA_APP_SECRET = "wa-app-secret-for-tests"
WA_VERIFY_TOKEN = "wa-verify-token"
WA_ACCESS_TOKEN = "wa-access-token"
PHONE_NUMBER_ID = "1098765432"
TEAMS_APP_ID = "6b1f8f8e-0000-4000-8000-00000000b07"
TEAMS_PASSWORD = "teams-bot-password"
TEAMS_ISSUER = "https://api.botframework.com"
GCHAT_PROJECT = "123456789012"
GCHAT_ISSUER = "chat@system.gserviceaccount.com"
CHAT_APP_EMAIL = "nika-bridge@nika-chat.iam.gserviceaccount.com"


@dataclass
class SigningKey:
    """An RSA key with its id, published as a JWK."""

    kid: str
    key: rsa.RSAPrivateKey = field(
        default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)
    )

    def jwk(self, endorsements: list[str] | None = None) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        data.update({"kid": self.kid, "use": "sig", "alg": "RS256"})
        if endorsements is not None:
            data["endorsements"] = endorsements
        return data

    def sign(self, claims: dict[str, Any]) -> str:
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": self.kid})


@dataclass
class Received:
    """One outbound call the bridge made."""

    path: str
    headers: dict[str, str]
    body: Any


class Standin:
    """The remote side of every gateway (state shared with the handler threads)."""

    def __init__(self) -> None:
        self.teams_keys = [SigningKey("bf-key-1")]
        self.gchat_keys = [SigningKey("chat-key-1")]
        self.chat_app = SigningKey("chat-app-sa-key")  # the Chat app's own service account
        self.received: list[Received] = []
        self.key_fetches: dict[str, int] = {"teams": 0, "gchat": 0}
        self.issued_tokens: set[str] = set()
        self.fail_next = 0
        self.lock = threading.Lock()
        self.url = ""

    # --- what the gateways send the bridge ---------------------------------------------------
    @staticmethod
    def wa_signature(body: bytes, secret: str = WA_APP_SECRET) -> str:
        return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()

    def wa_body(self, sender: str, text: str, message_id: str | None = None) -> bytes:
        message = {
            "from": sender,
            "id": message_id or f"wamid.{uuid.uuid4().hex}",
            "timestamp": str(int(time.time())),
            "type": "text",
            "text": {"body": text},
        }
        payload = {
            "object": "whatsapp_business_account",
            "entry": [{"id": "WABA", "changes": [{"field": "messages", "value": {
                "messaging_product": "whatsapp",
                "metadata": {"display_phone_number": "15550001111",
                             "phone_number_id": PHONE_NUMBER_ID},
                "contacts": [{"profile": {"name": "Someone"}, "wa_id": sender}],
                "messages": [message]}}]}],
        }  # fmt: skip
        return json.dumps(payload).encode()

    def teams_token(self, service_url: str, **override: Any) -> str:
        now = int(time.time())
        claims = {"iss": TEAMS_ISSUER, "aud": TEAMS_APP_ID, "iat": now, "nbf": now,
                  "exp": now + 3600, "serviceurl": service_url, **override}  # fmt: skip
        return self.teams_keys[-1].sign(claims)

    def teams_activity(self, sender: str, text: str, conversation: str) -> dict[str, Any]:
        return {
            "type": "message", "id": f"act-{uuid.uuid4().hex[:12]}", "channelId": "msteams",
            "serviceUrl": f"{self.url}/connector/", "timestamp": "2026-12-03T12:00:00Z",
            "from": {"id": sender, "name": "Someone", "aadObjectId": str(uuid.uuid4())},
            "conversation": {"id": conversation, "conversationType": "personal"},
            "recipient": {"id": f"28:{TEAMS_APP_ID}", "name": "nika"},
            "text": text,
        }  # fmt: skip

    def gchat_token(self, **override: Any) -> str:
        now = int(time.time())
        claims = {"iss": GCHAT_ISSUER, "aud": GCHAT_PROJECT, "iat": now, "exp": now + 3600,
                  **override}  # fmt: skip
        return self.gchat_keys[-1].sign(claims)

    @staticmethod
    def gchat_event(sender: str, text: str, space: str = "spaces/AAAA") -> dict[str, Any]:
        name = f"{space}/messages/{uuid.uuid4().hex[:10]}"
        return {
            "type": "MESSAGE", "eventTime": "2026-12-03T12:00:00.000Z", "space": {"name": space},
            "message": {"name": name, "text": text, "space": {"name": space, "type": "DM"},
                        "sender": {"name": sender, "type": "HUMAN", "email": "a@example.com"}},
        }  # fmt: skip

    def service_account(self) -> str:
        """The Chat app's service-account key file (JSON), token_uri on the stand-in."""
        pem = self.chat_app.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()  # fmt: skip
        return json.dumps({"type": "service_account", "project_id": "nika-chat",
                           "private_key_id": self.chat_app.kid, "private_key": pem,
                           "client_email": CHAT_APP_EMAIL,
                           "token_uri": f"{self.url}/google/token"})  # fmt: skip

    # --- what the bridge sent --------------------------------------------------------------------
    def sent(self, prefix: str) -> list[Received]:
        with self.lock:
            return [r for r in self.received if r.path.startswith(prefix)]

    def graph_messages(self) -> list[dict[str, Any]]:
        return [r.body for r in self.sent("/graph/")]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        s = self.server.standin
        base = f"http://127.0.0.1:{self.server.server_address[1]}"
        if self.path == "/botframework/openid":
            self._json(200, {"issuer": TEAMS_ISSUER, "jwks_uri": f"{base}/botframework/keys",
                             "id_token_signing_alg_values_supported": ["RS256"]})  # fmt: skip
        elif self.path == "/botframework/keys":
            with s.lock:
                s.key_fetches["teams"] += 1
                keys = [k.jwk(["msteams", "webchat"]) for k in s.teams_keys]
            self._json(200, {"keys": keys}, {"Cache-Control": "public, max-age=86400"})
        elif self.path == "/gchat/jwks":
            with s.lock:
                s.key_fetches["gchat"] += 1
                keys = [k.jwk() for k in s.gchat_keys]
            self._json(200, {"keys": keys})
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:
        s = self.server.standin
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        if self.path == "/google/token":
            self._google_token(raw)
            return
        if self.path == "/botframework/token":
            form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
            if (form.get("client_id"), form.get("client_secret")) != (TEAMS_APP_ID,
                                                                       TEAMS_PASSWORD):  # fmt: skip
                self._json(400, {"error": "invalid_client"})
                return
            token = f"bf-{uuid.uuid4().hex}"
            with s.lock:
                s.issued_tokens.add(token)
            self._json(200, {"token_type": "Bearer", "expires_in": 3600, "access_token": token})
            return
        with s.lock:
            failing = s.fail_next > 0
            if failing:
                s.fail_next -= 1
        if failing:
            self._json(503, {"error": "try later"})
            return
        bearer = headers.get("authorization", "").removeprefix("Bearer ")
        if self.path.startswith("/graph/"):
            ok = bearer == WA_ACCESS_TOKEN and self.path == f"/graph/{PHONE_NUMBER_ID}/messages"
        elif self.path.startswith(("/connector/v3/conversations/", "/chat/v1/spaces/")):
            ok = bearer in s.issued_tokens
        else:
            self._json(404, {"error": "not found"})
            return
        if not ok:
            self._json(401, {"error": "unauthorized"})
            return
        with s.lock:
            s.received.append(Received(unquote(self.path), headers, json.loads(raw)))
        self._json(200, {"messages": [{"id": f"wamid.out.{uuid.uuid4().hex[:8]}"}]}
                   if self.path.startswith("/graph/") else {"id": "reply-1"})  # fmt: skip

    def _google_token(self, raw: bytes) -> None:
        """RFC 7523 JWT bearer grant: the assertion must be signed by the app's key."""
        s = self.server.standin
        form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
        try:
            claims = jwt.decode(
                form.get("assertion", ""), s.chat_app.key.public_key(), algorithms=["RS256"],
                audience=f"{s.url}/google/token", issuer=CHAT_APP_EMAIL,
            )  # fmt: skip
        except jwt.PyJWTError as exc:
            self._json(400, {"error": "invalid_grant", "error_description": str(exc)})
            return
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" or (
            claims.get("scope") != "https://www.googleapis.com/auth/chat.bot"
        ):
            self._json(400, {"error": "invalid_scope"})
            return
        token = f"ya29.{uuid.uuid4().hex}"
        with s.lock:
            s.issued_tokens.add(token)
        self._json(200, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    standin: Standin


@contextmanager
def running_standin() -> Iterator[Standin]:
    """A stand-in on 127.0.0.1 (any free port), shut down afterwards."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.standin = Standin()
    server.standin.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.standin
    finally:
        server.shutdown()
        server.server_close()
