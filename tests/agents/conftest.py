"""Fixtures of the real-CLI suite: the pinned binaries, the mock model server, a nika tenant with
its hooks installed, and runners that drive ``claude -p`` / ``codex exec`` as a user would.

Everything runs offline: the CLIs talk to :mod:`tests.agents.mock_anthropic_openai` on
127.0.0.1; their hooks are the real ``nika hook …`` commands, talking to the test's embedded
Redis and the memory service running in a thread.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from nika_tui.domain.requests import RecallQuery
from nika_tui.domain.tenant import AgentCli, KernelConfig, TenantConfig
from nika_tui.services.agent_homes import claude_config_dir, codex_home
from nika_tui.services.config_store import save_tenant
from tests.agents.cli_install import CliInstallError, install_cli
from tests.agents.mock_anthropic_openai import MockModelServer
from tests.agents.mock_gemini_openai_chat import MockModelServer as GeminiChatServer
from tests.helpers import retry_until

TENANT = "agents"
CLI_TIMEOUT_S = 120


def _binary(package: str) -> Path:
    if shutil.which("npm") is None:
        pytest.skip("npm is not on PATH: the real-CLI suite needs node + npm (.ci/run installs it)")
    try:
        return install_cli(package)
    except CliInstallError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The pinned Claude Code binary."""
    return _binary("@anthropic-ai/claude-code")


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    """The pinned Codex binary."""
    return _binary("@openai/codex")


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    """The pinned Gemini CLI binary."""
    return _binary("@google/gemini-cli")


@pytest.fixture(scope="session")
def opencode_bin() -> Path:
    """The pinned OpenCode binary."""
    return _binary("opencode-ai")


@pytest.fixture
def mock_model() -> Iterator[MockModelServer]:
    """The mock Anthropic / OpenAI server on 127.0.0.1, a free port."""
    server = MockModelServer().start()
    yield server
    server.stop()


@pytest.fixture
def gemini_chat_model() -> Iterator[GeminiChatServer]:
    """The mock Gemini API / Chat Completions server (Gemini CLI, OpenCode), a free port."""
    server = GeminiChatServer().start()
    yield server
    server.stop()


@dataclass
class CliRun:
    """What one headless CLI run returned."""

    returncode: int
    stdout: str
    stderr: str


@dataclass
class AgentTenant:
    """A nika tenant whose agents run in ``project`` (a git checkout)."""

    tenant_id: str
    project: Path
    home: Path
    env: dict[str, str]
    mock: MockModelServer
    clis: list[str] = field(default_factory=list)

    def claude(self, binary: Path, prompt: str, resume: str | None = None) -> CliRun:
        """``claude -p PROMPT`` (``--resume SESSION``) in the project, as a user runs it."""
        argv = [str(binary), "-p", prompt]
        if resume:
            argv[1:1] = ["--resume", resume]
        env = {
            **self.env,
            "CLAUDE_CONFIG_DIR": str(claude_config_dir(self.tenant_id)),
            "ANTHROPIC_BASE_URL": self.mock.url,
            "ANTHROPIC_API_KEY": "sk-ant-test-not-a-secret",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        return _run(argv, self.project, env)

    def codex(self, binary: Path, prompt: str) -> CliRun:
        """``codex exec PROMPT`` in the project, on the tenant's CODEX_HOME."""
        env = {**self.env, "CODEX_HOME": str(codex_home(self.tenant_id)), "MOCK_API_KEY": "x"}
        return _run([str(binary), "exec", prompt], self.project, env)

    def stored(self, client: Any, text: str, timeout: float = 90.0) -> None:
        """Wait until the memory service has indexed a memory containing ``text``."""

        def probe() -> bool:
            result = client.recall(RecallQuery(tenant_id=self.tenant_id, query=text, limit=10))
            return any(text in h.record.text for h in result.hits)

        retry_until(probe, timeout=timeout, interval=0.3, what=f"memory {text!r} indexed")

    def hook_log(self) -> list[dict[str, Any]]:
        """Every line of ``{data}/logs/hooks.log``."""
        path = Path(self.env["NIKA_OS_DATA_DIR"]) / "logs" / "hooks.log"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> CliRun:
    proc = subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )
    return CliRun(proc.returncode, proc.stdout, proc.stderr)


def codex_provider_config(mock: MockModelServer) -> str:
    """The ``config.toml`` lines that point Codex at the mock (a custom Responses provider)."""
    return (
        'model = "gpt-mock"\n'
        'model_provider = "mock"\n\n'
        "[model_providers.mock]\n"
        'name = "mock"\n'
        f'base_url = "{mock.url}/v1"\n'
        'env_key = "MOCK_API_KEY"\n'
        'wire_api = "responses"\n'
    )


@pytest.fixture
def agent_tenant(
    tmp_path: Path, mock_model: MockModelServer, redis_url: str, isolated_env: dict[str, str]
) -> Callable[..., AgentTenant]:
    """Build a tenant for these CLIs, hooks installed by the kernel's own installer."""
    from nika_tui.engine.kernels.hook_install import install_for_tenant
    from nika_tui.paths import roots

    def make(clis: list[str], trust_codex: bool = True) -> AgentTenant:
        project = tmp_path / "acme-shop"
        project.mkdir(exist_ok=True)
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE_", "CODEX_"))
        }
        env.update(
            {
                "HOME": str(home),
                "NIKA_TENANT_ID": TENANT,
                "REDIS_URL": redis_url,
                **isolated_env,
            }
        )
        # Codex reads its provider from CODEX_HOME/config.toml: written before our installer
        # merges into it (as a user's existing config would be).
        chome = codex_home(TENANT)
        chome.mkdir(parents=True, exist_ok=True, mode=0o700)
        (chome / "config.toml").write_text(codex_provider_config(mock_model))
        for cli in clis:
            config = TenantConfig(
                tenant_id=TENANT,
                display_name="Agents",
                agent_cli=AgentCli(cli),
                kernel=KernelConfig(workdir=str(project), trust_codex_hooks=trust_codex),
            )
            save_tenant(config)
            install_for_tenant(config, roots())
        return AgentTenant(TENANT, project, home, env, mock_model, clis)

    return make
