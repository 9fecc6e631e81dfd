"""OAuth2 token requests (Contabo's Keycloak, Microsoft identity platform, Google)."""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from nika_tui.scale.providers.http import CloudHttp, ErrorInfo, json_error, status_kind

_BAD_CLIENT = {"invalid_client", "unauthorized_client", "invalid_grant", "invalid_request"}


def parse_token_error(resp: httpx.Response) -> ErrorInfo:
    """RFC 6749 §5.2 error bodies: a bad client or grant is an ``auth`` error."""
    body = json_error(resp)
    code = str(body.get("error") or f"HTTP {resp.status_code}")
    message = str(body.get("error_description") or code)
    kind = "auth" if code in _BAD_CLIENT else status_kind(resp.status_code)
    return kind, code, message


def fetch_token(http: CloudHttp, url: str, form: Mapping[str, str]) -> str:
    """POST a form to a token endpoint and return the ``access_token``.

    Raises:
        ProviderError: The endpoint refused (kind ``auth`` for a bad client or grant).
    """
    parse = http.parse_error
    http.parse_error = parse_token_error
    try:
        resp = http.send("POST", url, data=dict(form))
    finally:
        http.parse_error = parse
    return str(resp.json()["access_token"])
