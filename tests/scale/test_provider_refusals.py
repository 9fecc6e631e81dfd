"""Each provider's refusals as one line naming the provider, its code and the fix (issue 18).

The stand-ins answer with each provider's documented error body (with a message spread over
lines, as APIs do); a rate limit past the budget says who and when; an unreachable API names
the provider; and a Scaleway create whose later step fails deletes the server it made.
"""

from __future__ import annotations

import re
import socket
from typing import Any

import pytest

from nika_tui.domain.provider_formats import PROVIDER_LABELS
from nika_tui.domain.tenant import Provider
from nika_tui.errors import ProviderError
from nika_tui.scale.providers.aws import Ec2, parse_error
from nika_tui.scale.providers.factory import build_provider
from nika_tui.scale.providers.http import CloudHttp
from tests.scale.fake_clouds import CloudState
from tests.scale.support import ALL, CREATE, SECRETS, Make, live, shape, spec

MESSAGE = "the request is invalid:\n  field x\tis wrong"
#: Each provider's documented error body, its HTTP status and the code nika must name.
BODIES: dict[Provider, tuple[int, Any, str]] = {
    Provider.SCALEWAY: (
        400,
        {"type": "invalid_arguments", "message": MESSAGE},
        "invalid_arguments",
    ),
    Provider.CONTABO: (400, {"statusCode": 400, "message": MESSAGE}, "HTTP 400"),
    Provider.AZURE: (
        400,
        {"error": {"code": "InvalidParameter", "message": MESSAGE}},
        "InvalidParameter",
    ),
    Provider.GCP: (
        400,
        {
            "error": {
                "code": 400,
                "message": MESSAGE,
                "status": "INVALID_ARGUMENT",
                "errors": [{"reason": "invalid", "message": MESSAGE, "domain": "global"}],
            }
        },
        "invalid",
    ),
    Provider.AWS: (
        400,
        "<?xml version='1.0' encoding='UTF-8'?><Response><Errors><Error>"
        f"<Code>InvalidParameterValue</Code><Message>{MESSAGE}</Message></Error></Errors>"
        "<RequestID>ea966190-f9aa-478e-9ede-example</RequestID></Response>",
        "InvalidParameterValue",
    ),
    Provider.RUNPOD: (400, {"error": MESSAGE}, "HTTP 400"),
}


@pytest.fixture
def make(clouds: tuple[str, CloudState]) -> Make:
    """An adapter of ``provider`` at the stand-in."""

    def build(provider: Provider) -> Any:
        return build_provider(provider, SECRETS[provider], shape(provider), base_url=clouds[0])

    return build


def _named(err: ProviderError, provider: Provider) -> None:
    assert "\n" not in err.message and "\n" not in err.hint
    assert err.message.startswith(PROVIDER_LABELS[provider]), err.message


@pytest.mark.parametrize("provider", ALL, ids=[p.value for p in ALL])
def test_an_error_body_is_one_line_with_the_providers_code_and_message(
    provider: Provider, make: Make, clouds: tuple[str, CloudState]
) -> None:
    _, state = clouds
    method, path = CREATE[provider]
    status, body, code = BODIES[provider]
    state.fail(method, path, status, body)
    with pytest.raises(ProviderError) as caught:
        make(provider).create(spec(provider))
    err = caught.value
    _named(err, provider)
    assert f": {code}: " in err.message
    assert "the request is invalid: field x is wrong" in err.message
    assert err.hint, "a refusal always says what to do"
    assert live(state, provider) == []


@pytest.mark.parametrize("provider", ALL, ids=[p.value for p in ALL])
def test_a_rate_limit_past_the_budget_names_the_provider_and_the_wait(
    provider: Provider, make: Make, clouds: tuple[str, CloudState]
) -> None:
    _, state = clouds
    method, path = CREATE[provider]
    state.fail(method, path, 429, {"message": "slow down"}, headers={"Retry-After": "0"}, times=9)
    with pytest.raises(ProviderError) as caught:
        make(provider).create(spec(provider))
    err = caught.value
    _named(err, provider)
    assert err.kind == "rate" and "retry after 0 s" in err.message
    assert "wait and run the command again" in err.hint
    creates = [r for r in state.requests if r[0] == method and re.search(path, r[1])]
    assert len(creates) == 4, "the first try and three retries, then the error"
    assert live(state, provider) == []


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("provider", ALL, ids=[p.value for p in ALL])
def test_an_unreachable_api_names_the_provider_and_the_network(provider: Provider) -> None:
    base = f"http://127.0.0.1:{_closed_port()}"
    api = build_provider(provider, SECRETS[provider], shape(provider), base_url=base)
    with pytest.raises(ProviderError) as caught:
        api.list()
    err = caught.value
    _named(err, provider)
    assert err.kind == "network" and "unreachable" in err.message
    assert "network path" in err.hint


@pytest.mark.parametrize(
    ("method", "path", "status", "body", "headers"),
    [
        ("PATCH", r"/user_data/cloud-init$", 400, {"type": "invalid_request_error"}, {}),
        ("POST", r"/action$", 403, {"type": "permissions_denied", "message": "no"}, {}),
        ("POST", r"/action$", 429, {"type": "too_many_requests"}, {"Retry-After": "600"}),
    ],
    ids=["user-data-refused", "poweron-denied", "poweron-rate-limited"],
)
def test_a_scaleway_create_whose_later_step_fails_leaves_no_server(
    make: Make,
    clouds: tuple[str, CloudState],
    method: str,
    path: str,
    status: int,
    body: dict[str, str],
    headers: dict[str, str],
) -> None:
    _, state = clouds
    state.fail(method, path, status, body, headers=headers)
    with pytest.raises(ProviderError) as caught:
        make(Provider.SCALEWAY).create(spec(Provider.SCALEWAY))
    _named(caught.value, Provider.SCALEWAY)
    assert state.instances["scaleway"] == {}, "the stopped server was deleted"
    assert any(m == "DELETE" and re.search(r"/servers/[0-9a-f-]+$", p) for m, p in state.requests)


THROTTLED = (
    "<?xml version='1.0' encoding='UTF-8'?><Response><Errors><Error>"
    "<Code>RequestLimitExceeded</Code><Message>Request limit exceeded.</Message></Error>"
    "</Errors><RequestID>5c1e-example</RequestID></Response>"
)


def _ec2(base: str, waits: list[float]) -> Ec2:
    http = CloudHttp(Provider.AWS, parse_error, sleep=waits.append)
    return Ec2(SECRETS[Provider.AWS], shape(Provider.AWS).region, base_url=base, http=http)


def test_ec2_request_limit_exceeded_503_is_waited_out_then_created(
    clouds: tuple[str, CloudState],
) -> None:
    """EC2 throttles with HTTP 503 ``RequestLimitExceeded`` and no Retry-After: retried after
    the default second, not reported as a failure."""
    base, state = clouds
    state.fail("POST", r"^/$", 503, THROTTLED, times=2)
    waits: list[float] = []
    made = _ec2(base, waits).create(spec(Provider.AWS))
    assert waits == [1.0, 1.0]
    assert [i["id"] for i in live(state, Provider.AWS)] == [made.instance_id]


def test_ec2_throttling_past_the_budget_is_one_line_naming_aws(
    clouds: tuple[str, CloudState],
) -> None:
    base, state = clouds
    state.fail("POST", r"^/$", 503, THROTTLED, times=9)
    waits: list[float] = []
    with pytest.raises(ProviderError) as caught:
        _ec2(base, waits).create(spec(Provider.AWS))
    err = caught.value
    _named(err, Provider.AWS)
    assert err.kind == "rate" and "RequestLimitExceeded" in err.message
    assert len(waits) == 3 and live(state, Provider.AWS) == []
