"""Teams and Google Chat through the real server: JWTs signed by keys the stand-in publishes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import redis

from nika_tui.bridge.settings import load_config, save_config
from nika_tui.cli import main
from nika_tui.paths import Roots
from nika_tui.services import bridge_keys as keys
from tests.bridge import standins
from tests.bridge.conftest import ACME_GCHAT, ACME_TEAMS, BridgeProcess
from tests.bridge.standins import SigningKey, Standin
from tests.helpers import retry_until

if TYPE_CHECKING:  # libtmux is imported by the tmux fixture at use (issue 12)
    import libtmux

pytestmark = pytest.mark.tmux


def post_json(
    bridge: BridgeProcess, gateway: str, body: dict[str, Any], token: str, timeout: float = 30.0
) -> httpx.Response:
    return httpx.post(
        f"{bridge.url}/webhooks/{gateway}",
        content=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        timeout=timeout,
    )


def connector_replies(standin: Standin, count: int) -> list[Any]:
    def found() -> list[Any] | None:
        sent = standin.sent("/connector/")
        return sent if len(sent) >= count else None

    return retry_until(found, timeout=30, what=f"{count} Bot Framework repl(y/ies)")


def test_teams_activity_in_reply_posted_to_the_service_url(
    bridge: BridgeProcess, standin: Standin
) -> None:
    activity = standin.teams_activity(ACME_TEAMS, "<at>nika</at> summarise the sprint", "a:conv1")
    response = post_json(bridge, "teams", activity, standin.teams_token(activity["serviceUrl"]))
    assert response.status_code == 200, response.text
    (reply,) = connector_replies(standin, 1)
    assert reply.path == f"/connector/v3/conversations/a:conv1/activities/{activity['id']}"
    assert reply.body["type"] == "message" and reply.body["text"] == "echo: summarise the sprint"
    assert reply.body["replyToId"] == activity["id"]
    assert reply.headers["authorization"].removeprefix("Bearer ") in standin.issued_tokens


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("expired", "token expired"),
        ("audience", "audience"),
        ("issuer", "issuer"),
        ("unsigned", "unknown key id"),
        ("service_url", "serviceurl"),
    ],
)
def test_teams_bad_tokens_are_401_and_nothing_is_routed(
    bridge: BridgeProcess,
    standin: Standin,
    redis_client: redis.Redis,
    tmux_server: libtmux.Server,
    case: str,
    reason: str,
) -> None:
    activity = standin.teams_activity(ACME_TEAMS, "drop the database", "a:conv2")
    service_url = activity["serviceUrl"]
    now = int(time.time())
    token = {
        "expired": lambda: standin.teams_token(service_url, exp=now - 3600, iat=now - 7200,
                                               nbf=now - 7200),
        "audience": lambda: standin.teams_token(service_url, aud="someone-else"),
        "issuer": lambda: standin.teams_token(service_url, iss="https://evil.example"),
        "unsigned": lambda: SigningKey("attacker").sign({"iss": standins.TEAMS_ISSUER,
                                                         "aud": standins.TEAMS_APP_ID,
                                                         "exp": now + 600}),
        "service_url": lambda: standin.teams_token("http://127.0.0.1:1/elsewhere/"),
    }[case]()  # fmt: skip
    response = post_json(bridge, "teams", activity, token)
    assert response.status_code == 401
    assert reason in response.json()["error"]
    retry_until(lambda: reason in bridge.log_text(), what=f"{reason!r} in the log")
    assert redis_client.xlen(keys.inbox("acme")) == 0
    assert not tmux_server.has_session("nika-tenant-acme")
    assert standin.sent("/connector/") == []


def test_teams_key_rotation_is_picked_up_without_a_restart(
    bridge: BridgeProcess, standin: Standin
) -> None:
    first = standin.teams_activity(ACME_TEAMS, "first with the old key", "a:conv3")
    assert post_json(bridge, "teams", first, standin.teams_token(first["serviceUrl"])).is_success
    connector_replies(standin, 1)
    fetched = standin.key_fetches["teams"]
    with standin.lock:
        standin.teams_keys.append(SigningKey("bf-key-2"))  # the Bot Framework rotates
    second = standin.teams_activity(ACME_TEAMS, "second with the new key", "a:conv3")
    response = post_json(bridge, "teams", second, standin.teams_token(second["serviceUrl"]))
    assert response.status_code == 200, response.text
    assert standin.key_fetches["teams"] == fetched + 1
    assert connector_replies(standin, 2)[1].body["text"] == "echo: second with the new key"


def test_gchat_event_answered_in_the_response(bridge: BridgeProcess, standin: Standin) -> None:
    event = standin.gchat_event(ACME_GCHAT, "what did we decide about the cache")
    response = post_json(bridge, "gchat", event, standin.gchat_token())
    assert response.status_code == 200, response.text
    assert response.json() == {"text": "echo: what did we decide about the cache"}


def test_gchat_unknown_sender_refused_in_the_response(
    bridge: BridgeProcess, standin: Standin, tmux_server: libtmux.Server
) -> None:
    event = standin.gchat_event("users/999", "let me in")
    response = post_json(bridge, "gchat", event, standin.gchat_token())
    assert response.status_code == 200
    assert "not linked" in response.json()["text"]
    assert not tmux_server.has_session("nika-tenant-acme")


def test_gchat_token_from_another_issuer_is_401(
    bridge: BridgeProcess, standin: Standin, redis_client: redis.Redis
) -> None:
    event = standin.gchat_event(ACME_GCHAT, "hello")
    token = standin.gchat_token(iss="someone@example.iam.gserviceaccount.com")
    response = post_json(bridge, "gchat", event, token)
    assert response.status_code == 401
    expired = standin.gchat_token(exp=int(time.time()) - 3600)
    assert post_json(bridge, "gchat", event, expired).status_code == 401
    assert redis_client.xlen(keys.inbox("acme")) == 0


def test_gchat_late_answer_is_posted_through_the_chat_api(
    tenants: list[str], start_bridge: Callable[..., BridgeProcess], standin: Standin, where: Roots
) -> None:
    save_config(load_config(where).model_copy(update={"gchat_sync_wait_s": 0.0}), where)
    bridge = start_bridge()
    event = standin.gchat_event(ACME_GCHAT, "a question that takes a while", "spaces/BBBB")
    response = post_json(bridge, "gchat", event, standin.gchat_token())
    assert response.status_code == 200 and response.json() == {}

    def posted() -> list[Any] | None:
        return standin.sent("/chat/v1/spaces/BBBB/messages") or None

    (sent,) = retry_until(posted, timeout=30, what="the answer posted through the Chat API")
    assert sent.body == {"text": "echo: a question that takes a while"}
    assert sent.headers["authorization"].removeprefix("Bearer ") in standin.issued_tokens


def test_gchat_late_answer_without_credentials_is_kept_not_lost(
    tenants: list[str],
    start_bridge: Callable[..., BridgeProcess],
    standin: Standin,
    redis_client: redis.Redis,
    capsys: pytest.CaptureFixture[str],
    where: Roots,
) -> None:
    save_config(load_config(where).model_copy(update={"gchat_sync_wait_s": 0.0}), where)
    bridge = start_bridge(without=("GCHAT_SERVICE_ACCOUNT",))
    event = standin.gchat_event(ACME_GCHAT, "nobody can post this later")
    assert post_json(bridge, "gchat", event, standin.gchat_token()).json() == {}
    retry_until(lambda: redis_client.xlen(keys.DEAD) == 1, timeout=30, what="the kept answer")
    ((_, fields),) = redis_client.xrange(keys.DEAD)
    kept = json.loads(fields["out"])
    assert kept["text"] == "echo: nobody can post this later"
    assert "GCHAT_SERVICE_ACCOUNT" in kept["error"]
    # The operator adds the credentials and sends the kept answer again.
    bridge.proc.terminate()
    assert bridge.proc.wait(timeout=15) == 0
    start_bridge()
    assert main(["bridge", "retry", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"requeued": 1}

    def posted() -> list[Any] | None:
        return standin.sent("/chat/v1/spaces/AAAA/messages") or None

    (sent,) = retry_until(posted, timeout=30, what="the kept answer posted")
    assert sent.body["text"] == "echo: nobody can post this later"
    assert redis_client.xlen(keys.DEAD) == 0
