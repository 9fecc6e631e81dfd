"""Auto-memory through the running service: CLI, debounced sync, and the real Claude Code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from nika_tui.automemory.claude_sync import memory_dir
from nika_tui.automemory.runner import claude_project_root
from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import KernelConfig, TenantConfig
from nika_tui.services.agent_homes import claude_config_dir
from nika_tui.services.config_store import save_tenant
from tests.bridge.mock_anthropic import running_mock
from tests.helpers import retry_until
from tests.plugins.memory import RunningService

pytestmark = pytest.mark.embedder

FACT = "The acme web app deploys to production every Thursday at 10:00, never on Fridays"


def _tenant(workdir: Path) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    save_tenant(
        TenantConfig(
            tenant_id="acme", display_name="Acme", kernel=KernelConfig(workdir=str(workdir))
        )
    )


def _remember(svc: RunningService, text: str) -> None:
    req = RememberRequest(
        tenant_id="acme",
        text=text,
        meta=NikaMeta(timestamp=datetime.now(UTC), project_id="web"),
        idempotency_key=f"t-{abs(hash(text))}",
    )
    key = svc.client.remember(req)
    svc.client.wait_ingested("acme", key, timeout=60)


def test_service_syncs_after_ingest_without_being_asked(
    running_service: RunningService, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    _tenant(work)
    _remember(running_service, FACT)
    index = (
        memory_dir("acme", claude_project_root(work), running_service.ctx.settings.roots)
        / "MEMORY.md"
    )
    text = retry_until(
        lambda: index.read_text() if index.exists() else None,
        timeout=60,
        what="MEMORY.md written by the service's debounced sync",
    )
    assert "Thursday" in text


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nika_tui", *args], capture_output=True, text=True, timeout=180
    )


def test_cli_sync_json_and_bad_tenant(running_service: RunningService, tmp_path: Path) -> None:
    _tenant(tmp_path / "work")
    _remember(running_service, FACT)
    out = _cli("automemory", "sync", "--tenant", "acme", "--json")
    assert out.returncode == 0, out.stderr
    targets = {t["target"]: t for t in json.loads(out.stdout)["targets"]}
    assert set(targets) == {"claude", "codex", "gemini", "opencode"}
    assert Path(targets["codex"]["path"]).read_text().count("Thursday") == 1
    gemini = Path(targets["gemini"]["path"])
    assert gemini.name == "GEMINI.md" and gemini.read_text().count("Thursday") == 1
    opencode = Path(targets["opencode"]["path"])
    assert (opencode.parent.name, opencode.name) == ("opencode", "AGENTS.md")
    assert opencode.read_text().count("Thursday") == 1
    bad = _cli("automemory", "sync", "--tenant", "nobody", "--json")
    assert bad.returncode != 0 and "nobody" in bad.stderr and bad.stderr.count("\n") == 1


@pytest.fixture
def claude_bin() -> Path:
    from tests.agents.cli_install import PINNED, CliInstallError, install_cli

    package = "@anthropic-ai/claude-code"
    try:
        return install_cli(package, PINNED[package][0])
    except CliInstallError as exc:
        pytest.skip(f"Claude Code cannot be installed here: {exc}")


@pytest.mark.agents
def test_synced_fact_reaches_the_model_in_a_new_claude_session(
    running_service: RunningService, tmp_path: Path, claude_bin: Path
) -> None:
    work = tmp_path / "work"
    _tenant(work)
    _remember(running_service, FACT)
    out = _cli("automemory", "sync", "--tenant", "acme", "--json")
    assert out.returncode == 0, out.stderr
    home = tmp_path / "home"
    home.mkdir()
    with running_mock() as mock:
        env = {
            **os.environ,
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(claude_config_dir("acme")),
            "ANTHROPIC_BASE_URL": mock.url,
            "ANTHROPIC_API_KEY": "sk-ant-test-not-a-secret",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        run = subprocess.run(
            [str(claude_bin), "-p", "when do we deploy?"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert run.returncode == 0, run.stderr
        sent = [json.dumps(r.body) for r in mock.model_requests()]
    # The index (MEMORY.md) is in the model's context of the new session, with the fact's hook.
    assert any("MEMORY.md" in s and "every Thursday at 10:00" in s for s in sent)
