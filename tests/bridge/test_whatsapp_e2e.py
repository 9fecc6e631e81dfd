"""WhatsApp through the real ``nika bridge serve``, a Graph stand-in and real tmux kernels."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import redis

from nika_tui.domain.bridge import Gateway, normalize_sender
from nika_tui.services import bridge_keys as keys
from nika_tui.services.bus import open_bus
from nika_tui.services.redis_keys import INGEST_STREAM
from tests.bridge import standins
from tests.bridge.conftest import (
    ACME_WA,
    GLOBEX_WA,
    STRANGER_WA,
    BridgeProcess,
    wait_for_graph,
)
from tests.bridge.standins import Standin
from tests.helpers import retry_until

if TYPE_CHECKING:  # libtmux is imported by the tmux fixture at use (issue 12)
    import libtmux

pytestmark = pytest.mark.tmux

ACME = normalize_sender(Gateway.WHATSAPP, ACME_WA)
GLOBEX = normalize_sender(Gateway.WHATSAPP, GLOBEX_WA)


def post(bridge: BridgeProcess, body: bytes, signature: str | None = None) -> httpx.Response:
    headers = {"Content-Type": "application/json",
               "X-Hub-Signature-256": signature or Standin.wa_signature(body)}  # fmt: skip
    return httpx.post(f"{bridge.url}/webhooks/whatsapp", content=body, headers=headers)


def pane_text(server: libtmux.Server, tenant: str) -> str:
    session = server.sessions.get(session_name=f"nika-tenant-{tenant}")
    assert session is not None
    return "\n".join(session.active_window.active_pane.capture_pane(start=-200))


def test_verify_handshake_echoes_the_challenge_only_with_the_token(
    bridge: BridgeProcess,
) -> None:
    query = {"hub.mode": "subscribe", "hub.verify_token": standins.WA_VERIFY_TOKEN,
             "hub.challenge": "1158201444"}  # fmt: skip
    ok = httpx.get(f"{bridge.url}/webhooks/whatsapp", params=query)
    assert ok.status_code == 200 and ok.text == "1158201444"
    bad = httpx.get(f"{bridge.url}/webhooks/whatsapp", params={**query, "hub.verify_token": "x"})
    assert bad.status_code == 403 and "1158201444" not in bad.text


def test_a_message_in_the_reply_out_with_its_envelope(
    bridge: BridgeProcess, standin: Standin, redis_client: redis.Redis, tmux_server: libtmux.Server
) -> None:
    text = "deploys of the acme shop happen on fridays after the review"
    body = standin.wa_body(ACME, text, "wamid.first")
    response = post(bridge, body)
    assert response.status_code == 200, response.text

    replies = wait_for_graph(standin, ACME)
    assert replies == [f"echo: {text}"]
    sent = standin.graph_messages()[0]
    assert sent["messaging_product"] == "whatsapp" and sent["type"] == "text"
    assert sent["context"] == {"message_id": "wamid.first"}
    # It went through the tenant's kernel, typed as a prompt, and the hook saw it as the
    # person's message: trigger=user, the gateway in agent_type, the conversation as session.
    assert f"echo: {text}" in pane_text(tmux_server, "acme")

    def captured() -> dict[str, Any] | None:
        for _, fields in redis_client.xrange(INGEST_STREAM):
            req = json.loads(fields["req"])
            if req["tenant_id"] == "acme" and req["text"] == text:
                return dict(req)
        return None

    req = retry_until(captured, what="the prompt on the ingest stream")
    assert req["meta"]["trigger"] == "user"
    assert req["meta"]["agent_type"] == "claude-code@whatsapp"
    assert req["meta"]["session_id"] == f"whatsapp:{ACME}"

    # The bridge records its outgoing line after the gateway accepted the reply, so the line
    # may land just after the stand-in saw the message (CI saw it): wait for it.
    def bus_kinds() -> list[str] | None:
        kinds = [line.data["kind"] for line in open_bus("acme").read() if line.data]
        return kinds if "bridge.in" in kinds and "bridge.out" in kinds else None

    retry_until(bus_kinds, what="bridge.in and bridge.out on acme's bus")


def test_a_bad_signature_is_401_and_nothing_is_routed(
    bridge: BridgeProcess, standin: Standin, redis_client: redis.Redis, tmux_server: libtmux.Server
) -> None:
    body = standin.wa_body(ACME, "transfer everything to account 42")
    forged = Standin.wa_signature(body, secret="not-the-app-secret")
    response = post(bridge, body, forged)
    assert response.status_code == 401
    missing = httpx.post(f"{bridge.url}/webhooks/whatsapp", content=body,
                         headers={"Content-Type": "application/json"})  # fmt: skip
    assert missing.status_code == 401
    assert redis_client.xlen(keys.inbox("acme")) == 0
    assert not tmux_server.has_session("nika-tenant-acme")
    retry_until(lambda: "X-Hub-Signature-256 does not match" in bridge.log_text(),
                what="the refusal reason in the log")  # fmt: skip
    assert standin.graph_messages() == []


def test_a_replayed_message_id_is_answered_once(bridge: BridgeProcess, standin: Standin) -> None:
    body = standin.wa_body(ACME, "what is on the roadmap this week", "wamid.replayed")
    assert post(bridge, body).status_code == 200
    assert post(bridge, body).status_code == 200  # the gateway's retry
    wait_for_graph(standin, ACME, 1)
    assert post(bridge, body).status_code == 200  # and a late one
    # A later message's answer comes after any answer to the replays would have (one
    # sender's messages are answered in order), so waiting for it proves there was none.
    later = standin.wa_body(ACME, "and the one after that", "wamid.later")
    assert post(bridge, later).status_code == 200
    texts = wait_for_graph(standin, ACME, 2)
    assert texts == ["echo: what is on the roadmap this week", "echo: and the one after that"]


def test_an_unknown_sender_is_refused_politely_and_reaches_no_kernel(
    bridge: BridgeProcess, standin: Standin, redis_client: redis.Redis, tmux_server: libtmux.Server
) -> None:
    body = standin.wa_body(STRANGER_WA, "hello, who is this?")
    assert post(bridge, body).status_code == 200
    (refusal,) = wait_for_graph(standin, STRANGER_WA)
    assert "not linked" in refusal
    assert not tmux_server.has_session("nika-tenant-acme")
    assert not tmux_server.has_session("nika-tenant-globex")
    assert all(redis_client.xlen(keys.inbox(t)) == 0 for t in ("acme", "globex"))


def test_two_tenants_senders_never_cross(
    bridge: BridgeProcess, standin: Standin, tmux_server: libtmux.Server
) -> None:
    assert post(bridge, standin.wa_body(ACME, "acme secret plan alpha")).status_code == 200
    assert post(bridge, standin.wa_body(GLOBEX, "globex secret plan beta")).status_code == 200
    assert wait_for_graph(standin, ACME) == ["echo: acme secret plan alpha"]
    assert wait_for_graph(standin, GLOBEX) == ["echo: globex secret plan beta"]
    acme_pane, globex_pane = pane_text(tmux_server, "acme"), pane_text(tmux_server, "globex")
    assert "plan alpha" in acme_pane and "plan beta" not in acme_pane
    assert "plan beta" in globex_pane and "plan alpha" not in globex_pane


def test_a_browser_origin_is_refused(bridge: BridgeProcess, standin: Standin) -> None:
    body = standin.wa_body(ACME, "hello from a web page")
    response = httpx.post(f"{bridge.url}/webhooks/whatsapp", content=body, headers={
        "Content-Type": "application/json", "Origin": "https://evil.example",
        "X-Hub-Signature-256": Standin.wa_signature(body)})  # fmt: skip
    assert response.status_code == 403
    assert standin.graph_messages() == []


def test_secrets_reach_neither_the_kernel_nor_a_command_line(
    bridge: BridgeProcess, standin: Standin, tmux_server: libtmux.Server
) -> None:
    assert post(bridge, standin.wa_body(ACME, "show me your environment")).status_code == 200
    wait_for_graph(standin, ACME)
    secrets = [standins.WA_APP_SECRET, standins.WA_ACCESS_TOKEN, standins.TEAMS_PASSWORD,
               standins.WA_VERIFY_TOKEN]  # fmt: skip
    session = tmux_server.sessions.get(session_name="nika-tenant-acme")
    assert session is not None
    pane_pid = int(session.active_window.active_pane.pane_pid or 0)
    pids = [pane_pid, *map(int, Path(f"/proc/{pane_pid}/task/{pane_pid}/children").read_text()
                           .split())]  # fmt: skip
    global_env = "\n".join(tmux_server.cmd("show-environment", "-g").stdout)
    for pid in [*pids, bridge.proc.pid]:
        environ = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        assert not any(s in cmdline for s in secrets)
        if pid != bridge.proc.pid:
            assert not any(s in environ for s in secrets), pid
    assert not any(s in global_env for s in secrets)
    log = (Path(os.environ["NIKA_OS_DATA_DIR"]) / "logs" / "bridge.log").read_text()
    assert not any(s in log for s in secrets)
