"""Offline credential format checks, env var names and masking."""

from __future__ import annotations

import json
from typing import NamedTuple

import pytest

from nika_tui.domain.provider_formats import (
    PROVIDER_FIELDS,
    check_field,
    field_spec,
    mask,
    masked_value,
)
from nika_tui.domain.tenant import Provider

GOOD_UUID = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
PEM = "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n"


def service_account(**overrides: object) -> str:
    data: dict[str, object] = {
        "type": "service_account",
        "project_id": "acme-prod",
        "private_key_id": "0123456789abcdef",
        "private_key": PEM,
        "client_email": "nika@acme-prod.iam.gserviceaccount.com",
    }
    data.update(overrides)
    return json.dumps({k: v for k, v in data.items() if v is not None})


class Case(NamedTuple):
    test_id: str
    provider: Provider
    field: str
    value: str
    ok: bool


CASES = [
    Case("aws-akia", Provider.AWS, "access_key_id", "AKIAIOSFODNN7EXAMPLE", True),
    Case("aws-asia", Provider.AWS, "access_key_id", "ASIAIOSFODNN7EXAMPL2", True),
    Case("aws-lowercase", Provider.AWS, "access_key_id", "akiaIOSFODNN7EXAMPLE", False),
    Case("aws-short", Provider.AWS, "access_key_id", "AKIA123", False),
    Case("aws-wrong-prefix", Provider.AWS, "access_key_id", "AKIBIOSFODNN7EXAMPLE", False),
    Case(
        "aws-secret-40",
        Provider.AWS,
        "secret_access_key",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        True,
    ),
    Case(
        "aws-secret-39",
        Provider.AWS,
        "secret_access_key",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKE",
        False,
    ),
    Case("scw-access", Provider.SCALEWAY, "access_key", "SCWABCDEFGHIJ1234567", True),
    Case("scw-access-16", Provider.SCALEWAY, "access_key", "SCWABCDEFGHIJ123456", False),
    Case("scw-access-lower", Provider.SCALEWAY, "access_key", "SCWabcdefghij1234567", False),
    Case("scw-secret-uuid", Provider.SCALEWAY, "secret_key", GOOD_UUID, True),
    Case("scw-secret-not-uuid", Provider.SCALEWAY, "secret_key", "not-a-uuid", False),
    Case("azure-tenant", Provider.AZURE, "tenant_id", GOOD_UUID, True),
    Case("azure-tenant-bad", Provider.AZURE, "tenant_id", "contoso.onmicrosoft.com", False),
    Case("azure-client", Provider.AZURE, "client_id", GOOD_UUID.upper(), True),
    Case("azure-secret", Provider.AZURE, "client_secret", "Abc8Q~x.y_z-1234567890", True),
    Case("azure-secret-space", Provider.AZURE, "client_secret", "abc def ghi", False),
    Case("contabo-id", Provider.CONTABO, "client_id", "INT-11833581", True),
    Case("contabo-secret", Provider.CONTABO, "client_secret", "s3cr3tS3cr3t", True),
    Case("contabo-secret-short", Provider.CONTABO, "client_secret", "abc", False),
    Case("contabo-user", Provider.CONTABO, "user", "ops@acme.example", True),
    Case("contabo-user-not-email", Provider.CONTABO, "user", "ops", False),
    Case("contabo-pass", Provider.CONTABO, "password", "x", True),
    Case("contabo-pass-empty", Provider.CONTABO, "password", "", False),
    Case("runpod", Provider.RUNPOD, "api_key", "rpa_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123", True),
    Case("runpod-short", Provider.RUNPOD, "api_key", "short", False),
    Case("gcp-ok", Provider.GCP, "service_account", service_account(), True),
    Case("gcp-not-json", Provider.GCP, "service_account", "{nope", False),
    Case(
        "gcp-wrong-type",
        Provider.GCP,
        "service_account",
        service_account(type="authorized_user"),
        False,
    ),
    Case("gcp-no-key", Provider.GCP, "service_account", service_account(private_key=None), False),
    Case(
        "gcp-no-email", Provider.GCP, "service_account", service_account(client_email=None), False
    ),
    Case(
        "gcp-no-project", Provider.GCP, "service_account", service_account(project_id=None), False
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_format_checks(case: Case) -> None:
    reason = check_field(case.provider, case.field, case.value)
    assert (reason is None) == case.ok, reason
    if not case.ok:
        assert reason  # a reason the wizard can show


def test_reasons_name_what_is_missing() -> None:
    reason = check_field(Provider.GCP, "service_account", service_account(client_email=None))
    assert reason == "missing client_email"


def test_env_var_names_are_the_conventional_ones() -> None:
    names = {p: [s.env_var for s in specs] for p, specs in PROVIDER_FIELDS.items()}
    assert names == {
        Provider.SCALEWAY: ["SCW_ACCESS_KEY", "SCW_SECRET_KEY"],
        Provider.CONTABO: [
            "CNTB_OAUTH2_CLIENT_ID",
            "CNTB_OAUTH2_CLIENT_SECRET",
            "CNTB_OAUTH2_USER",
            "CNTB_OAUTH2_PASS",
        ],
        Provider.AZURE: ["AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET"],
        Provider.GCP: ["GOOGLE_APPLICATION_CREDENTIALS"],
        Provider.AWS: ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"],
        Provider.RUNPOD: ["RUNPOD_API_KEY"],
    }
    assert field_spec("gcp", "service_account").env_is_path
    assert field_spec("scaleway", "secret_key").key == "scaleway.secret_key"


def test_mask_keeps_only_the_last_four() -> None:
    assert mask("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY") == "****EKEY"
    assert mask("short") == "****"  # too short: the last 4 would reveal most of it
    assert masked_value("gcp", "service_account", service_account()) == (
        "nika@acme-prod.iam.gserviceaccount.com (key ****cdef)"
    )
    assert PEM not in masked_value("gcp", "service_account", service_account())
