"""Online checks against a local HTTP server that answers like each provider's API."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

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
from tests.fake_providers import AWS, AZ, CNTB, GCP, PEM, RUNPOD, SCW, fake_provider_server


@pytest.fixture(scope="module")
def endpoints() -> Iterator[Endpoints]:
    with fake_provider_server() as urls:
        yield urls


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
        Provider.AWS: "secret_access_key",
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
    result = verify_provider(
        Provider.SCALEWAY, SCW, endpoints=Endpoints.local(f"http://127.0.0.1:{port}")
    )
    assert result.status is VerifyStatus.NETWORK
    assert "key not judged" in result.detail


def test_a_silent_server_times_out_as_network() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)  # accepts the connection, never answers
        port = s.getsockname()[1]
        result = verify_provider(
            Provider.RUNPOD,
            RUNPOD,
            endpoints=Endpoints.local(f"http://127.0.0.1:{port}"),
            timeout=0.3,
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


def test_sigv4_matches_the_aws_published_vector() -> None:
    # AWS SigV4 test suite, "post-x-www-form-urlencoded".
    import datetime as dt

    from nika_tui.services.provider_verify import sigv4_headers

    headers = sigv4_headers(
        "AKIDEXAMPLE",
        "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        "https://example.amazonaws.com/",
        "Param1=value1",
        dt.datetime(2015, 8, 30, 12, 36, tzinfo=dt.UTC),
        service="service",
        content_type="application/x-www-form-urlencoded",
    )
    assert headers["Authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
        "SignedHeaders=content-type;host;x-amz-date, "
        "Signature=ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"
    )
