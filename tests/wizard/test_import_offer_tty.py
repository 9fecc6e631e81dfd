"""``nika setup`` on a real pseudo-terminal offers to import what the detected CLI wrote.

``tests/wizard/test_import_offer.py`` calls the offer itself with piped keys and counts what
is queued; here the whole wizard runs as a person meets it, once per CLI: a HOME where the
pinned binary ran once headless (``claude -p`` / ``gemini -p`` against the mock model server,
before nika was set up) — for Gemini CLI a person's own ``~/.gemini`` (API-key login, the
project folder trusted) — that binary alone on PATH (so the wizard detects it and makes it the
tenant's agent), every question answered on the terminal. The wizard offers the one session
(``~/.claude/projects`` / ``~/.gemini/tmp/<project hash>/chats``); a "yes" puts the session's
fact into the tenant through the memory service, with the time of the session line holding it
as valid time; a "no" says how to import later and queues nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis

from nika_tui.domain.memory import Layer
from nika_tui.domain.requests import RecallQuery
from nika_tui.domain.tenant import AgentCli
from nika_tui.importer.sessions import parse_time
from nika_tui.services import redis_keys
from nika_tui.services.config_store import load_tenant
from nika_tui.services.gemini_settings import TRUST_FOLDER
from tests.helpers import retry_until
from tests.plugins.memory import RunningService
from tests.support.setup_pty import run_setup

pytestmark = [pytest.mark.agents, pytest.mark.slow]

FACT = "Remember this: the invoicing cron runs at 04:17 UTC on the box named quokka-7."


def _gemini_login(home: Path, project: Path) -> None:
    """A person's own ``~/.gemini``: API-key login, the project folder trusted (Gemini CLI
    refuses to run headless in a folder the person has not trusted)."""
    own = home / ".gemini"
    own.mkdir(parents=True, mode=0o700)
    (own / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}})
    )
    (own / "trustedFolders.json").write_text(json.dumps({str(project.resolve()): TRUST_FOLDER}))


@dataclass(frozen=True)
class Cli:
    """What differs between the CLIs whose offer is driven here."""

    agent: AgentCli
    label: str  # as the offer names it
    package: str  # npm
    mock: str  # the module of the mock model server it talks to
    own_vars: tuple[str, ...]  # prefixes of the person's variables left out
    run_env: dict[str, str]  # the mock's URL is added as ``url_var``
    url_var: str
    sessions: str  # where its sessions live, under HOME
    agent_type: str  # NIKA_META's agent_type of an imported fact
    import_name: str  # ``nika import`` source name
    prepare: Callable[[Path, Path], None] | None = None


CLAUDE = Cli(
    AgentCli.CLAUDE_CODE, "Claude Code", "@anthropic-ai/claude-code",
    "tests.agents.mock_anthropic_openai", ("ANTHROPIC_", "CLAUDE_", "CODEX_"),
    {"ANTHROPIC_API_KEY": "sk-ant-test-not-a-secret",
     "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},
    "ANTHROPIC_BASE_URL", ".claude/projects", "claude-code", "claude",
)  # fmt: skip
GEMINI = Cli(
    AgentCli.GEMINI_CLI, "Gemini CLI", "@google/gemini-cli",
    "tests.agents.mock_gemini_openai_chat", ("GEMINI_", "GOOGLE_"),
    {"GEMINI_API_KEY": "test-key-not-a-secret", "NO_COLOR": "1"},
    "GOOGLE_GEMINI_BASE_URL", ".gemini/tmp", "gemini", "gemini", _gemini_login,
)  # fmt: skip


def _binary(cli: Cli) -> Path:
    from tests.agents.cli_install import CliInstallError, install_cli

    if shutil.which("npm") is None:
        pytest.skip(f"npm is not on PATH: the pinned {cli.label} comes from npm")
    try:
        return install_cli(cli.package)
    except CliInstallError as exc:
        pytest.fail(str(exc))


@dataclass(frozen=True)
class Ran:
    """A HOME where the real CLI ran once (``-p FACT``), its binary, and when the run began."""

    cli: Cli
    home: Path
    binary: Path
    started: datetime


@pytest.fixture(params=[CLAUDE, GEMINI], ids=["claude-code", "gemini-cli"])
def ran(request: pytest.FixtureRequest, tmp_path: Path) -> Ran:
    import importlib

    cli: Cli = request.param
    binary = _binary(cli)
    home = tmp_path / "home"
    project = tmp_path / "acme-api"
    (project / ".git").mkdir(parents=True)
    if cli.prepare is not None:
        cli.prepare(home, project)
    env = {k: v for k, v in os.environ.items() if not k.startswith(cli.own_vars)}
    server = importlib.import_module(cli.mock).MockModelServer().start()
    try:
        started = datetime.now(UTC)
        run = subprocess.run(
            [str(binary), "-p", FACT],
            cwd=project,
            env=env | {"HOME": str(home), cli.url_var: server.url} | cli.run_env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    finally:
        server.stop()
    assert run.returncode == 0, run.stderr[-2000:]
    return Ran(cli, home, binary, started)


def _setup(tmp_path: Path, ran: Ran, accept: bool) -> str:
    """``nika setup`` on a pty for tenant acme, the offer answered; what it printed."""
    offer = f"Import your 1 existing {ran.cli.label} session into 'acme'?"
    said = run_setup(tmp_path, ran.home, ran.cli.agent, ran.binary, "acme", offer, accept)
    # The agent question's default was the CLI found on PATH, detected.
    assert load_tenant("acme").agent_cli is ran.cli.agent
    return said


def test_yes_to_the_offer_puts_the_session_in_the_tenant(
    tmp_path: Path, ran: Ran, running_service: RunningService, redis_client: redis.Redis
) -> None:
    began = datetime.now(UTC)
    said = _setup(tmp_path, ran, accept=True)
    assert "1 sessions" in said and "0 skipped" in said and "queued " in said, said

    def imported() -> Any:
        found = running_service.client.recall(
            RecallQuery(tenant_id="acme", query="when does the invoicing cron run", limit=10)
        )
        return next((h.record for h in found.hits if "quokka-7" in h.record.text), None)

    fact = retry_until(imported, timeout=120, interval=0.2, what="the imported fact recalled")
    assert fact.layer is Layer.SEMANTIC
    assert fact.meta.agent_type == ran.cli.agent_type
    # NIKA_META names the session line holding the fact, and its time is the valid time: the
    # session's own, before the setup began.
    path, line = fact.meta.source.rsplit(":", 1)
    assert Path(path).is_relative_to(ran.home / ran.cli.sessions)
    raw = Path(path).read_text(encoding="utf-8").splitlines()[int(line) - 1]
    assert "quokka-7" in raw
    at = parse_time(json.loads(raw)["timestamp"])
    assert fact.valid_from == at
    assert at is not None and ran.started <= at <= began
    assert redis_client.scard(redis_keys.import_keys("acme")) >= 1


def test_no_to_the_offer_says_how_later_and_imports_nothing(
    tmp_path: Path, ran: Ran, redis_client: redis.Redis
) -> None:
    said = _setup(tmp_path, ran, accept=False)  # the tenant is written all the same
    assert f"Later: `nika import --tenant acme {ran.cli.import_name}`" in said, said
    assert redis_client.xlen(redis_keys.INGEST_STREAM) == 0
    assert not redis_client.exists(redis_keys.import_keys("acme"), redis_keys.import_files("acme"))
