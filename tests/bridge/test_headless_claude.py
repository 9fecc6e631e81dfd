"""The headless path with the real Claude Code (``claude -p --resume``) against a local model."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from nika_tui.bridge.headless import sessions_key
from nika_tui.bridge.settings import load_config, save_config
from nika_tui.domain.bridge import Gateway, normalize_sender
from nika_tui.domain.tenant import AgentCli, KernelConfig, TenantConfig
from nika_tui.paths import Roots
from nika_tui.services.config_store import save_tenant
from nika_tui.services.redis_keys import INGEST_STREAM
from tests.bridge.conftest import ACME_WA, BridgeProcess, wait_for_graph
from tests.bridge.mock_anthropic import running_mock
from tests.bridge.standins import Standin
from tests.helpers import retry_until

pytestmark = pytest.mark.agents

ACME = normalize_sender(Gateway.WHATSAPP, ACME_WA)


@pytest.fixture
def claude_bin() -> Path:
    from tests.agents.cli_install import PINNED, CliInstallError, install_cli

    package = "@anthropic-ai/claude-code"
    try:
        return install_cli(package, PINNED[package][0])
    except CliInstallError as exc:
        pytest.skip(f"Claude Code cannot be installed here: {exc}")


@pytest.fixture
def headless_env(
    tenants: list[str],
    tmp_path: Path,
    claude_bin: Path,
    monkeypatch: pytest.MonkeyPatch,
    where: Roots,
) -> Iterator[object]:
    """acme answered headless by the real claude, pointed at the mock model."""
    work = tmp_path / "work-acme"
    save_tenant(TenantConfig(tenant_id="acme", display_name="Acme",
                             agent_cli=AgentCli.CLAUDE_CODE,
                             kernel=KernelConfig(workdir=str(work))))  # fmt: skip
    save_config(load_config(where).model_copy(update={"headless_tenants": ["acme"]}), where)
    home = tmp_path / "home"
    home.mkdir()
    with running_mock() as mock:
        monkeypatch.setenv("PATH", f"{claude_bin.parent}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.setenv("ANTHROPIC_BASE_URL", mock.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-secret")
        monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        yield mock


def _post(bridge: BridgeProcess, body: bytes) -> int:
    import httpx

    headers = {
        "Content-Type": "application/json",
        "X-Hub-Signature-256": Standin.wa_signature(body),
    }
    return httpx.post(f"{bridge.url}/webhooks/whatsapp", content=body, headers=headers).status_code


def test_headless_claude_answers_and_resumes_the_conversation(
    headless_env: object,
    start_bridge: Callable[..., BridgeProcess],
    standin: Standin,
    redis_client: redis.Redis,
) -> None:
    mock = headless_env
    bridge = start_bridge()
    first = "the acme deploy window is friday at nine in the morning"
    assert _post(bridge, standin.wa_body(ACME, first, "wamid.h1")) == 200
    assert wait_for_graph(standin, ACME, timeout=120) == [f"answer to: {first}"]
    session = redis_client.hget(sessions_key("acme"), f"whatsapp:{ACME}")
    assert session

    second = "when is the deploy window again"
    assert _post(bridge, standin.wa_body(ACME, second, "wamid.h2")) == 200
    assert wait_for_graph(standin, ACME, 2, timeout=120)[1] == f"answer to: {second}"
    # Resumed: the model saw the first exchange in the second request, same session kept.
    last = json.dumps(mock.model_requests()[-1].body["messages"])  # type: ignore[attr-defined]
    assert first in last and second in last
    assert redis_client.hget(sessions_key("acme"), f"whatsapp:{ACME}") == session

    def captured() -> dict[str, object] | None:  # the tenant's hooks ran, with the bridge's meta
        for _, fields in redis_client.xrange(INGEST_STREAM):
            req = json.loads(fields["req"])
            if req["text"] == first:
                return dict(req)
        return None

    meta = retry_until(captured, what="the prompt captured by the real hook")["meta"]
    assert meta["trigger"] == "user" and meta["agent_type"] == "claude-code@whatsapp"  # type: ignore[index]
