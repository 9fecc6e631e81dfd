"""Delivery guarantees end to end: a kernel that is down, a gateway that fails, bad input."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
import redis

from nika_tui.bridge.settings import load_config, save_config
from nika_tui.domain.bridge import Gateway, normalize_sender
from nika_tui.paths import Roots
from nika_tui.services import bridge_keys as keys
from nika_tui.services.config_store import save_tenant
from nika_tui.services.redis_keys import INGEST_STREAM
from tests.bridge.conftest import (
    ACME_WA,
    STANDIN_AGENT,
    BridgeProcess,
    tenant_config,
    wait_for_graph,
)
from tests.bridge.standins import Standin
from tests.helpers import retry_until

if TYPE_CHECKING:  # libtmux is imported by the tmux fixture at use (issue 12)
    import libtmux

pytestmark = pytest.mark.tmux

ACME = normalize_sender(Gateway.WHATSAPP, ACME_WA)


def post(bridge: BridgeProcess, body: bytes, **headers: str) -> httpx.Response:
    sent = {"Content-Type": "application/json", "X-Hub-Signature-256": Standin.wa_signature(body)}
    sent.update({k.replace("_", "-"): v for k, v in headers.items()})
    return httpx.post(f"{bridge.url}/webhooks/whatsapp", content=body, headers=sent)


def test_kernel_down_message_kept_and_delivered_when_it_is_back(
    tenants: list[str],
    tmp_path: Path,
    start_bridge: Callable[[], BridgeProcess],
    standin: Standin,
    redis_client: redis.Redis,
    tmux_server: libtmux.Server,
) -> None:
    workdir = tmp_path / "work-acme"
    broken = [*STANDIN_AGENT, "--exit-at-once", "3"]  # the agent CLI cannot start
    save_tenant(tenant_config("acme", workdir, broken))
    bridge = start_bridge()
    assert post(bridge, standin.wa_body(ACME, "are you there, agent?", "wamid.kept")).is_success

    def kept() -> bool:
        errors = redis_client.lrange(keys.tenant_errors("acme"), 0, -1)
        return any("message kept" in json.loads(e)["reason"] for e in errors)

    retry_until(kept, timeout=30, what="the delivery failure recorded, message kept")
    assert redis_client.xlen(keys.inbox("acme")) == 1
    assert standin.graph_messages() == []

    save_tenant(tenant_config("acme", workdir, STANDIN_AGENT))  # the operator fixes the CLI
    assert wait_for_graph(standin, ACME, timeout=60) == ["echo: are you there, agent?"]
    retry_until(lambda: redis_client.xlen(keys.inbox("acme")) == 0, what="inbox drained")


def test_messages_wait_across_a_bridge_restart(
    tenants: list[str],
    tmp_path: Path,
    start_bridge: Callable[[], BridgeProcess],
    standin: Standin,
    redis_client: redis.Redis,
    where: Roots,
) -> None:
    config = load_config(where)
    save_config(config.model_copy(update={"spawn_kernels": False}), where)
    bridge = start_bridge()
    assert post(bridge, standin.wa_body(ACME, "first while nothing runs", "wamid.r1")).is_success
    assert post(bridge, standin.wa_body(ACME, "second while nothing runs", "wamid.r2")).is_success
    retry_until(lambda: redis_client.xlen(keys.inbox("acme")) == 2, what="two kept messages")
    bridge.proc.terminate()
    assert bridge.proc.wait(timeout=15) == 0
    save_config(config, where)  # kernels may be spawned again; a new bridge resumes the inbox
    start_bridge()
    texts = wait_for_graph(standin, ACME, 2, timeout=60)
    assert texts == ["echo: first while nothing runs", "echo: second while nothing runs"]


def test_a_failing_gateway_gets_the_reply_again_until_it_takes_it(
    bridge: BridgeProcess, standin: Standin, redis_client: redis.Redis
) -> None:
    with standin.lock:
        standin.fail_next = 2  # Graph answers 503 twice
    assert post(bridge, standin.wa_body(ACME, "please retry me", "wamid.retry")).is_success
    assert wait_for_graph(standin, ACME, timeout=60) == ["echo: please retry me"]
    errors = [
        json.loads(e)["reason"] for e in redis_client.lrange(keys.tenant_errors("acme"), 0, -1)
    ]
    assert sum("reply not delivered" in e and "503" in e for e in errors) == 2
    # The stand-in records the reply before the bridge reads Graph's answer and acks the entry.
    retry_until(lambda: redis_client.xlen(keys.OUTBOX) == 0, what="the outbox emptied")
    assert redis_client.xlen(keys.DEAD) == 0


@pytest.mark.parametrize(
    ("case", "status", "reason"),
    [
        ("too_big", 413, "over 4096"),
        ("malformed", 400, "not valid JSON"),
        ("content_type", 415, "is not JSON"),
        ("not_an_object", 400, "not a JSON object"),
        ("wrong_shape", 400, "entry is not a list"),
        ("bad_sender", 400, "not a phone number"),
    ],
)
def test_bad_input_is_a_4xx_with_a_reason_never_a_crash(
    tenants: list[str],
    start_bridge: Callable[[], BridgeProcess],
    standin: Standin,
    redis_client: redis.Redis,
    tmux_server: libtmux.Server,
    case: str,
    status: int,
    reason: str,
    where: Roots,
) -> None:
    save_config(load_config(where).model_copy(update={"max_body_bytes": 4096}), where)
    bridge = start_bridge()
    body = {
        "too_big": standin.wa_body(ACME, "x" * 5000),
        "malformed": b'{"object": "whatsapp_business_account", "entry": [',
        "content_type": standin.wa_body(ACME, "hello"),
        "not_an_object": b"[1, 2, 3]",
        "wrong_shape": b'{"object": "whatsapp_business_account", "entry": 7}',
        "bad_sender": standin.wa_body("$(reboot)", "hello"),
    }[case]
    extra = {"Content_Type": "text/plain"} if case == "content_type" else {}
    response = post(bridge, body, **extra)
    assert response.status_code == status, response.text
    assert reason in response.json()["error"]
    retry_until(lambda: reason in bridge.log_text(), what=f"{reason!r} in the log")
    assert httpx.get(f"{bridge.url}/healthz").json()["ok"] is True
    assert redis_client.xlen(keys.inbox("acme")) == 0
    assert redis_client.xlen(INGEST_STREAM) == 0
    assert not tmux_server.has_session("nika-tenant-acme")
    assert reason in (Path(os.environ["NIKA_OS_DATA_DIR"]) / "logs" / "bridge.log").read_text()
