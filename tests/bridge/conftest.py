"""Fixtures of the bridge tests: gateway stand-ins, two tenants, the real ``nika bridge serve``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from nika_tui.bridge.settings import save_config
from nika_tui.domain.bridge import BridgeConfig, Gateway, link
from nika_tui.domain.tenant import AgentCli, KernelConfig, TenantConfig
from nika_tui.paths import Roots
from nika_tui.services.config_store import save_tenant
from nika_tui.settings import Settings
from tests.bridge import standins
from tests.bridge.standins import Standin, running_standin
from tests.helpers import retry_until

if TYPE_CHECKING:  # libtmux is imported by the tmux fixture at use (issue 12)
    import libtmux

STANDIN_AGENT = [sys.executable, "-m", "nika_tui.assets.standin_agent", "--claude-hooks"]
ACME_WA = "+33 6 12 34 56 78"
GLOBEX_WA = "+49 151 1234 5678"
STRANGER_WA = "15550009999"
ACME_TEAMS = "29:acme-user-1"
ACME_GCHAT = "users/1001"


def tenant_config(tenant_id: str, workdir: Path, command: list[str]) -> TenantConfig:
    """A tenant whose kernel is the stand-in agent running Claude Code's hooks."""
    return TenantConfig(
        tenant_id=tenant_id,
        display_name=tenant_id.title(),
        agent_cli=AgentCli.CLAUDE_CODE,
        kernel=KernelConfig(workdir=str(workdir), command=command),
    )


@pytest.fixture
def standin() -> Iterator[Standin]:
    with running_standin() as s:
        yield s


@pytest.fixture
def where(isolated_env: dict[str, str]) -> Roots:
    """The roots of the test's environment, as a ``nika`` command there resolves them."""
    return Settings.from_env(isolated_env).roots


@pytest.fixture
def tenants(tmp_path: Path, redis_url: str, tmux_server: libtmux.Server, where: Roots) -> list[str]:
    """acme and globex, each with linked senders."""
    for tenant in ("acme", "globex"):
        work = tmp_path / f"work-{tenant}"
        work.mkdir()
        save_tenant(tenant_config(tenant, work, STANDIN_AGENT))
    config = BridgeConfig()
    config = link(config, Gateway.WHATSAPP, ACME_WA, "acme")
    config = link(config, Gateway.WHATSAPP, GLOBEX_WA, "globex")
    config = link(config, Gateway.TEAMS, ACME_TEAMS, "acme")
    config = link(config, Gateway.GCHAT, ACME_GCHAT, "acme")
    # Keys rotate in a test within seconds; the refetch rate limit has its own test.
    save_config(config.model_copy(update={"key_refetch_min_s": 0.0}), where)
    return ["acme", "globex"]


@dataclass
class BridgeProcess:
    """The running ``nika bridge serve``: its URL and what it printed."""

    proc: subprocess.Popen[str]
    url: str
    output: list[str] = field(default_factory=list)

    def log_text(self) -> str:
        return "\n".join(self.output)


def bridge_env(standin: Standin) -> dict[str, str]:
    """The process environment: the test's isolated dirs, secrets, stand-in URLs."""
    env = dict(os.environ)
    env.update(
        {
            "WHATSAPP_APP_SECRET": standins.WA_APP_SECRET,
            "WHATSAPP_VERIFY_TOKEN": standins.WA_VERIFY_TOKEN,
            "WHATSAPP_ACCESS_TOKEN": standins.WA_ACCESS_TOKEN,
            "WHATSAPP_GRAPH_URL": f"{standin.url}/graph",
            "MICROSOFT_APP_ID": standins.TEAMS_APP_ID,
            "MICROSOFT_APP_PASSWORD": standins.TEAMS_PASSWORD,
            "TEAMS_OPENID_URL": f"{standin.url}/botframework/openid",
            "MICROSOFT_TOKEN_URL": f"{standin.url}/botframework/token",
            "GCHAT_PROJECT_NUMBER": standins.GCHAT_PROJECT,
            "GCHAT_JWKS_URL": f"{standin.url}/gchat/jwks",
            "GCHAT_API_URL": f"{standin.url}/chat",
            "GCHAT_SERVICE_ACCOUNT": standin.service_account(),
        }
    )
    return env


@pytest.fixture
def start_bridge(standin: Standin) -> Iterator[Callable[..., BridgeProcess]]:
    """Start the real ``nika bridge serve --port 0``; stopped (SIGTERM) afterwards."""
    started: list[BridgeProcess] = []

    def start(without: tuple[str, ...] = ()) -> BridgeProcess:
        env = {k: v for k, v in bridge_env(standin).items() if k not in without}
        proc = subprocess.Popen(
            [sys.executable, "-m", "nika_tui", "bridge", "serve", "--port", "0"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "listening on" in first, first + proc.stdout.read()
        url = first.split("listening on ", 1)[1].split()[0]
        bridge = BridgeProcess(proc, url, [first.rstrip()])
        stdout = proc.stdout

        def pump() -> None:
            for line in stdout:
                bridge.output.append(line.rstrip())

        threading.Thread(target=pump, daemon=True).start()
        started.append(bridge)
        return bridge

    yield start
    for bridge in started:
        if bridge.proc.poll() is None:
            bridge.proc.send_signal(signal.SIGTERM)
            try:
                bridge.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                bridge.proc.kill()
                bridge.proc.wait()


@pytest.fixture
def bridge(tenants: list[str], start_bridge: Callable[[], BridgeProcess]) -> BridgeProcess:
    """The bridge serving the two tenants."""
    return start_bridge()


def wait_for_graph(standin: Standin, to: str, count: int = 1, timeout: float = 30.0) -> list[str]:
    """The texts of the first ``count`` Graph messages sent to ``to``."""

    def texts() -> list[str] | None:
        found = [m["text"]["body"] for m in standin.graph_messages() if m["to"] == to]
        return found if len(found) >= count else None

    return retry_until(texts, timeout=timeout, what=f"{count} WhatsApp message(s) to {to}")
