"""Google Chat answers posted later, through the Chat REST API as the app itself.

An answer that misses the event's 30-second window is created with
``POST {api_url}/v1/{space}/messages`` (in the message's thread when it had one), authorised
by an access token of the Chat app's service account: a JWT assertion signed with its private
key (``iss`` the account, ``scope`` ``chat.bot``, ``aud`` its ``token_uri``) exchanged at
``token_uri`` (OAuth 2.0 JWT bearer grant, RFC 7523). The token is cached until a minute
before it expires. The service account JSON is the secret ``GCHAT_SERVICE_ACCOUNT`` (its text,
or the path of its file).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jwt

from nika_tui.bridge.webhook import chunks, failed, unreachable
from nika_tui.domain.bridge import InboundMessage
from nika_tui.errors import ConfigError

SCOPE = "https://www.googleapis.com/auth/chat.bot"
GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
MAX_TEXT = 4096


def load_service_account(value: str) -> dict[str, str]:
    """The service account from its JSON text or the path of its file.

    Raises:
        ConfigError: unreadable, not JSON, or lacking ``client_email`` / ``private_key`` /
            ``token_uri`` (the message never shows the key).
    """
    text = value.strip()
    if not text.startswith("{"):
        try:
            text = Path(text).expanduser().read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"GCHAT_SERVICE_ACCOUNT: cannot read the file ({exc.strerror})",
                "give the service account's JSON or the path of its key file",
            ) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError("GCHAT_SERVICE_ACCOUNT is not JSON", "paste the key file's JSON") from exc
    if not isinstance(data, dict):
        raise ConfigError("GCHAT_SERVICE_ACCOUNT is not a JSON object", "paste the key file's JSON")
    missing = [k for k in ("client_email", "private_key", "token_uri") if not data.get(k)]
    if missing:
        raise ConfigError(
            f"GCHAT_SERVICE_ACCOUNT lacks {', '.join(missing) or 'fields'}",
            "download a JSON key of the Chat app's service account",
        )
    return {str(k): str(v) for k, v in data.items()}


@dataclass
class ChatApi:
    """The Chat REST API as the app's service account."""

    account: dict[str, str]
    api_url: str
    _token: tuple[str, float] = ("", 0.0)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _bearer(self, http: httpx.Client) -> str:
        with self._lock:
            token, expires = self._token
            if token and time.monotonic() < expires:
                return token
            now = int(time.time())
            claims = {"iss": self.account["client_email"], "scope": SCOPE,
                      "aud": self.account["token_uri"], "iat": now, "exp": now + 3600}  # fmt: skip
            headers = {"kid": self.account["private_key_id"]} if self.account.get(
                "private_key_id") else None  # fmt: skip
            assertion = jwt.encode(claims, self.account["private_key"], algorithm="RS256",
                                   headers=headers)  # fmt: skip
            try:
                response = http.post(
                    self.account["token_uri"], data={"grant_type": GRANT, "assertion": assertion}
                )
            except httpx.HTTPError as exc:
                raise unreachable(exc, "Google token endpoint") from exc
            if response.status_code != 200:
                raise failed(response, "Google token endpoint")
            data: dict[str, Any] = response.json()
            token = str(data.get("access_token") or "")
            life = float(data.get("expires_in") or 3600)
            self._token = (token, time.monotonic() + max(0.0, life - 60))
            return token

    def post(self, http: httpx.Client, message: InboundMessage, text: str) -> None:
        """Create the answer in the message's space (and thread)."""
        url = f"{self.api_url.rstrip('/')}/v1/{message.conversation}/messages"
        thread = message.reply_to.get("thread", "")
        params = {"messageReplyOption": "REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD"} if thread else {}
        for part in chunks(text, MAX_TEXT):
            body: dict[str, Any] = {"text": part}
            if thread:
                body["thread"] = {"name": thread}
            headers = {"Authorization": f"Bearer {self._bearer(http)}"}
            try:
                response = http.post(url, json=body, params=params, headers=headers)
            except httpx.HTTPError as exc:
                raise unreachable(exc, "Google Chat API") from exc
            if response.status_code == 401:
                self._token = ("", 0.0)
            if response.status_code // 100 != 2:
                raise failed(response, "Google Chat API")
