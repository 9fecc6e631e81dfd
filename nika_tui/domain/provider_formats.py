"""Offline format checks for provider credentials, their env var names, and masking.

Every check is pure: it looks at the shape of a value, never at the network (the online check is
:mod:`nika_tui.services.provider_verify`, opt-in). A check returns ``None`` when the value is
well-formed, else the reason in one short phrase that the wizard shows inline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from nika_tui.domain.tenant import Provider

Check = Callable[[str], str | None]

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_GCP_REQUIRED = ("type", "project_id", "private_key", "client_email")


def _regex(pattern: str, expected: str) -> Check:
    compiled = re.compile(pattern)

    def check(value: str) -> str | None:
        return None if compiled.fullmatch(value) else f"expected {expected}"

    return check


def _token(min_len: int, max_len: int = 512) -> Check:
    def check(value: str) -> str | None:
        if not value:
            return "must not be empty"
        if any(c.isspace() for c in value):
            return "must not contain spaces or line breaks"
        if not min_len <= len(value) <= max_len:
            return f"expected {min_len} to {max_len} characters, got {len(value)}"
        return None

    return check


def _uuid(value: str) -> str | None:
    return (
        None
        if _UUID.fullmatch(value)
        else "expected a UUID like 1b4e28ba-2fa1-11d2-883f-0016d3cca427"
    )


def _email(value: str) -> str | None:
    return None if _EMAIL.fullmatch(value) else "expected an e-mail address"


def _non_empty(value: str) -> str | None:
    return None if value else "must not be empty"


def parse_service_account(text: str) -> dict[str, object] | str:
    """Parse a GCP service-account JSON.

    Args:
        text: The file's content.

    Returns:
        The parsed object when it is a service account with every required key, else the reason
        it is not (a string).
    """
    try:
        data = json.loads(text)
    except ValueError:
        return "not valid JSON"
    if not isinstance(data, dict):
        return "expected a JSON object"
    missing = [k for k in _GCP_REQUIRED if not isinstance(data.get(k), str) or not data.get(k)]
    if missing:
        return "missing " + ", ".join(missing)
    if data["type"] != "service_account":
        return f"type is {data['type']!r}, expected 'service_account'"
    if "PRIVATE KEY" not in str(data["private_key"]):
        return "private_key is not a PEM private key"
    if _email(str(data["client_email"])) is not None:
        return "client_email is not an e-mail address"
    return data


def _service_account(value: str) -> str | None:
    parsed = parse_service_account(value)
    return parsed if isinstance(parsed, str) else None


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One credential field of a provider.

    Attributes:
        provider: The provider.
        name: Field name, used in references (``{provider}.{name}``).
        label: Human label shown by the wizard.
        env_var: The provider's conventional environment variable.
        check: The offline format check.
        expected: What a good value looks like, for hints.
        env_is_path: The env var holds a path to a file whose content is the value (GCP).
        secret: Typed hidden in the wizard (identifiers such as GUIDs are shown).
    """

    provider: Provider
    name: str
    label: str
    env_var: str
    check: Check
    expected: str
    env_is_path: bool = False
    secret: bool = True

    @property
    def key(self) -> str:
        """``{provider}.{field}``: the keyring username and the insecure-file key."""
        return f"{self.provider.value}.{self.name}"


PROVIDER_LABELS: dict[Provider, str] = {
    Provider.SCALEWAY: "Scaleway",
    Provider.CONTABO: "Contabo",
    Provider.AZURE: "Microsoft Azure",
    Provider.GCP: "Google Cloud",
    Provider.AWS: "AWS",
    Provider.RUNPOD: "RunPod",
}

_S, _C, _Z, _G, _A, _R = (
    Provider.SCALEWAY,
    Provider.CONTABO,
    Provider.AZURE,
    Provider.GCP,
    Provider.AWS,
    Provider.RUNPOD,
)

PROVIDER_FIELDS: dict[Provider, tuple[FieldSpec, ...]] = {
    _S: (
        FieldSpec(
            _S,
            "access_key",
            "Scaleway access key",
            "SCW_ACCESS_KEY",
            _regex(r"^SCW[A-Z0-9]{17}$", "'SCW' followed by 17 capital letters or digits"),
            "SCW + 17 characters [A-Z0-9]",
        ),
        FieldSpec(_S, "secret_key", "Scaleway secret key", "SCW_SECRET_KEY", _uuid, "a UUID"),
    ),
    _C: (
        FieldSpec(
            _C,
            "client_id",
            "Contabo OAuth2 client id",
            "CNTB_OAUTH2_CLIENT_ID",
            _token(3),
            "id",
            secret=False,
        ),
        FieldSpec(
            _C,
            "client_secret",
            "Contabo OAuth2 client secret",
            "CNTB_OAUTH2_CLIENT_SECRET",
            _token(8),
            "8+ characters, no spaces",
        ),
        FieldSpec(
            _C,
            "user",
            "Contabo API user (e-mail)",
            "CNTB_OAUTH2_USER",
            _email,
            "e-mail",
            secret=False,
        ),
        FieldSpec(
            _C, "password", "Contabo API password", "CNTB_OAUTH2_PASS", _non_empty, "non-empty"
        ),
    ),
    _Z: (
        FieldSpec(
            _Z, "tenant_id", "Azure tenant id", "AZURE_TENANT_ID", _uuid, "a GUID", secret=False
        ),
        FieldSpec(
            _Z,
            "client_id",
            "Azure client (app) id",
            "AZURE_CLIENT_ID",
            _uuid,
            "a GUID",
            secret=False,
        ),
        FieldSpec(
            _Z,
            "client_secret",
            "Azure client secret",
            "AZURE_CLIENT_SECRET",
            _token(8, 255),
            "8-255 characters, no spaces",
        ),
    ),
    _G: (
        FieldSpec(
            _G,
            "service_account",
            "Google Cloud service-account JSON",
            "GOOGLE_APPLICATION_CREDENTIALS",
            _service_account,
            "a service-account JSON (type, project_id, private_key, client_email)",
            env_is_path=True,
        ),
    ),
    _A: (
        FieldSpec(
            _A,
            "access_key_id",
            "AWS access key id",
            "AWS_ACCESS_KEY_ID",
            _regex(r"^(AKIA|ASIA)[A-Z0-9]{16}$", "AKIA or ASIA followed by 16 [A-Z0-9]"),
            "AKIA/ASIA + 16 characters [A-Z0-9]",
        ),
        FieldSpec(
            _A,
            "secret_access_key",
            "AWS secret access key",
            "AWS_SECRET_ACCESS_KEY",
            _regex(r"^[A-Za-z0-9/+=]{40}$", "40 characters [A-Za-z0-9/+=]"),
            "40 characters",
        ),
    ),
    _R: (
        FieldSpec(
            _R,
            "api_key",
            "RunPod API key",
            "RUNPOD_API_KEY",
            _regex(r"^[A-Za-z0-9_-]{20,128}$", "20-128 characters [A-Za-z0-9_-]"),
            "20-128 characters",
        ),
    ),
}


def field_spec(provider: Provider | str, field: str) -> FieldSpec:
    """The spec of one field.

    Raises:
        KeyError: ``field`` is not a field of ``provider``.
    """
    for spec in PROVIDER_FIELDS[Provider(provider)]:
        if spec.name == field:
            return spec
    raise KeyError(f"{provider}.{field}")


def check_field(provider: Provider | str, field: str, value: str) -> str | None:
    """Check one credential value offline.

    Args:
        provider: The provider.
        field: The field name (see :data:`PROVIDER_FIELDS`).
        value: The candidate value (for GCP, the JSON text, not its path).

    Returns:
        ``None`` when well-formed, else the reason.
    """
    return field_spec(provider, field).check(value)


def mask(secret: str) -> str:
    """Show only the last 4 characters; short secrets are hidden whole.

    A secret under 8 characters would be half revealed by its last 4, so it shows as ``****``.
    """
    if len(secret) < 8:
        return "****"
    return "****" + secret[-4:]


def masked_value(provider: Provider | str, field: str, value: str) -> str:
    """How the summary shows a credential: masked; a GCP JSON by its ``private_key_id``."""
    if field_spec(provider, field).env_is_path:
        parsed = parse_service_account(value)
        if isinstance(parsed, dict):
            return f"{parsed['client_email']} (key {mask(str(parsed.get('private_key_id', '')))})"
    return mask(value)
