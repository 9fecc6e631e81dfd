"""The six provider adapters against local stand-ins speaking each documented protocol."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import pytest

from nika_tui.domain.tenant import Provider
from nika_tui.errors import ProviderError
from nika_tui.scale.providers.factory import build_provider
from tests.fake_providers import AWS
from tests.scale.fake_clouds import QUOTA, CloudState, fake_clouds
from tests.scale.support import ALL, CREATE, SECRETS, Make, live, shape, spec

BAD_REGION = {
    Provider.SCALEWAY: {"region": "mars-1"},
    Provider.CONTABO: {"region": "MARS"},
    Provider.AZURE: {"region": "marsnorth"},
    Provider.GCP: {"region": "mars-1a"},
    Provider.AWS: {"region": "mars-1"},
    Provider.RUNPOD: {"instance_type": "NVIDIA H9000"},
}


@pytest.fixture
def clouds() -> Iterator[tuple[str, CloudState]]:
    with fake_clouds() as served:
        yield served


@pytest.fixture
def make(clouds: tuple[str, CloudState]) -> Make:
    base, _ = clouds

    def build(provider: Provider, secrets: dict[str, str] | None = None, **over: Any):
        return build_provider(
            provider, secrets or SECRETS[provider], shape(provider, **over), base_url=base
        )

    return build


@pytest.mark.parametrize("provider", ALL, ids=[p.value for p in ALL])
def test_create_list_delete_round_trip(provider: Provider, make: Make, clouds) -> None:
    _, state = clouds
    api = make(provider)
    created = api.create(spec(provider))
    listed = api.list()
    assert [(i.instance_id, i.tenant_id, i.plan_id) for i in listed] == [
        (created.instance_id, "acme", "0123abcd")
    ]
    api.delete(created.instance_id)
    assert api.list() == []
    assert live(state, provider) == []
    api.delete(created.instance_id)  # gone already: not an error


def _bad(provider: Provider) -> dict[str, str]:
    secrets = dict(SECRETS[provider])
    if provider is Provider.GCP:
        import json

        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = other.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        info = json.loads(secrets["service_account"])
        secrets["service_account"] = json.dumps({**info, "private_key": pem})
        return secrets
    field = {
        Provider.SCALEWAY: "secret_key",
        Provider.CONTABO: "password",
        Provider.AZURE: "client_secret",
        Provider.AWS: "secret_access_key",
        Provider.RUNPOD: "api_key",
    }[provider]
    secrets[field] = secrets[field][:-4] + "XXXX"
    return secrets


@pytest.mark.parametrize("provider", ALL, ids=[p.value for p in ALL])
def test_bad_key_is_one_line_naming_provider_and_fix(provider, make: Make, clouds) -> None:
    _, state = clouds
    bad = _bad(provider)
    with pytest.raises(ProviderError) as caught:
        make(provider, bad).create(spec(provider))
    err = caught.value
    assert err.kind == "auth"
    assert "\n" not in err.message
    assert err.message.split(" ")[0] in {
        "Scaleway",
        "Contabo",
        "Microsoft",
        "Google",
        "AWS",
        "RunPod",
    }
    assert "credentials" in err.hint
    assert live(state, provider) == []
    for value in bad.values():
        if len(value) > 8:
            assert value not in str(err)


@pytest.mark.parametrize("provider", ALL, ids=[p.value for p in ALL])
def test_quota_refusal_creates_nothing_more(provider, make: Make, clouds) -> None:
    _, state = clouds
    api = make(provider)
    for n in range(QUOTA):
        api.create(spec(provider, plan=f"a{n}"))
    with pytest.raises(ProviderError) as caught:
        api.create(spec(provider, plan="over"))
    assert caught.value.kind == "quota", caught.value.message
    assert "quota" in caught.value.hint
    assert len(live(state, provider)) == QUOTA


@pytest.mark.parametrize("provider", ALL, ids=[p.value for p in ALL])
def test_region_refusal_creates_nothing(provider, make: Make, clouds) -> None:
    _, state = clouds
    over = BAD_REGION[provider]
    with pytest.raises(ProviderError) as caught:
        make(provider, **over).create(spec(provider, **over))
    assert caught.value.kind == "region", caught.value.message
    assert "region" in caught.value.hint
    assert live(state, provider) == []


@pytest.mark.parametrize("provider", ALL, ids=[p.value for p in ALL])
def test_429_with_retry_after_is_retried(provider, make: Make, clouds) -> None:
    _, state = clouds
    method, path = CREATE[provider]
    state.fail(method, path, 429, {"message": "slow down"}, headers={"Retry-After": "0"})
    api = make(provider)
    api.create(spec(provider))
    creates = [r for r in state.requests if r[0] == method and __import__("re").search(path, r[1])]
    assert len(creates) == 2
    assert len(live(state, provider)) == 1


@pytest.mark.parametrize("provider", ALL, ids=[p.value for p in ALL])
def test_429_beyond_budget_is_an_error_saying_when(provider, make: Make, clouds) -> None:
    _, state = clouds
    method, path = CREATE[provider]
    state.fail(method, path, 429, {"message": "slow down"}, headers={"Retry-After": "120"})
    with pytest.raises(ProviderError) as caught:
        make(provider).create(spec(provider))
    assert caught.value.kind == "rate"
    assert "retry after 120 s" in caught.value.message
    assert live(state, provider) == []


def test_scaleway_poweron_failure_deletes_the_created_server(make: Make, clouds) -> None:
    _, state = clouds
    state.fail("POST", r"/action$", 500, {"type": "internal_error", "message": "boom"})
    with pytest.raises(ProviderError):
        make(Provider.SCALEWAY).create(spec(Provider.SCALEWAY))
    assert state.instances["scaleway"] == {}
    assert "DELETE" in [m for m, _ in state.requests]


def test_aws_client_token_makes_a_repeated_create_return_the_same_instance(make, clouds) -> None:
    _, state = clouds
    api = make(Provider.AWS)
    first = api.create(spec(Provider.AWS, plan="samekey"))
    second = api.create(spec(Provider.AWS, plan="samekey"))
    assert first.instance_id == second.instance_id
    assert len(live(state, Provider.AWS)) == 1


def test_aws_signature_with_wrong_secret_is_refused_by_sigv4_check(make, clouds) -> None:
    secrets = {**AWS, "secret_access_key": "v" * 40}
    with pytest.raises(ProviderError) as caught:
        make(Provider.AWS, secrets).list()
    assert "SignatureDoesNotMatch" in caught.value.message


def test_gcp_operation_error_deletes_the_instance(make, clouds) -> None:
    _, state = clouds
    body = {
        "kind": "compute#operation",
        "status": "DONE",
        "error": {"errors": [{"code": "ZONE_RESOURCE_POOL_EXHAUSTED", "message": "no capacity"}]},
    }
    state.fail("POST", r"/instances$", 200, body)
    with pytest.raises(ProviderError) as caught:
        make(Provider.GCP).create(spec(Provider.GCP))
    assert caught.value.kind == "region"
    assert (
        "DELETE",
        "/compute/v1/projects/acme/zones/europe-west4-a/instances/nika-acme--0123abcd",
    ) in state.requests


def test_azure_failed_provisioning_deletes_the_vm(make, clouds) -> None:
    _, state = clouds
    body = {"name": "nika-acme--0123abcd", "properties": {"provisioningState": "Failed"}}
    state.fail("PUT", r"/virtualMachines/", 201, body)
    with pytest.raises(ProviderError):
        make(Provider.AZURE).create(spec(Provider.AZURE))
    assert any(m == "DELETE" and p.endswith("/nika-acme--0123abcd") for m, p in state.requests)


class MarkerCase(NamedTuple):
    test_id: str
    name: str
    expected: tuple[str, str] | None


@pytest.mark.parametrize(
    "case",
    [
        MarkerCase("ours", "nika-acme--0123abcd", ("acme", "0123abcd")),
        MarkerCase("dashed-tenant", "nika-a-b--ff", ("a-b", "ff")),
        MarkerCase("foreign", "web-1", None),
        MarkerCase("no-plan", "nika-acme", None),
    ],
    ids=lambda c: c.test_id,
)
def test_worker_name_markers(case: MarkerCase) -> None:
    from nika_tui.scale.providers.base import parse_worker_name

    assert parse_worker_name(case.name) == case.expected


@pytest.mark.parametrize("provider", ALL, ids=[p.value for p in ALL])
def test_an_error_body_echoing_the_key_never_shows_it(provider, make: Make, clouds) -> None:
    _, state = clouds
    method, path = CREATE[provider]
    secret = max(SECRETS[provider].values(), key=len)
    echo = f"bad request for {secret}"
    body: object = {"message": echo, "error": {"code": "X", "message": echo}, "type": echo}
    if provider is Provider.AWS:
        body = (
            f"<Response><Errors><Error><Code>X</Code><Message>{echo}</Message>"
            "</Error></Errors></Response>"
        )
    state.fail(method, path, 400, body)
    with pytest.raises(ProviderError) as caught:
        make(provider).create(spec(provider))
    assert secret not in str(caught.value) and "***" in caught.value.message
