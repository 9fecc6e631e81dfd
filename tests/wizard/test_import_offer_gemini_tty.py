"""``nika setup`` on a real pseudo-terminal offers a Gemini CLI tenant what Gemini CLI wrote.

As ``test_import_offer_tty.py`` does for Claude Code: a HOME whose ``~/.gemini`` is a person's
own (API-key login, the project folder trusted) and where the pinned Gemini CLI ran once
headless (``gemini -p`` against the mock model server, before nika was set up), that binary
alone on PATH, every question of ``nika setup`` answered on the terminal. The wizard detects
Gemini CLI, offers its one session (``~/.gemini/tmp/<project hash>/chats``), and a "yes" puts
the session's fact into the tenant through the memory service, with the time of the session
line holding it as valid time; a "no" says how to import later and queues nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
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
OFFER = "Import your 1 existing Gemini CLI session into 'acme'?"


def _gemini_bin() -> Path:
    import shutil

    from tests.agents.cli_install import CliInstallError, install_cli

    if shutil.which("npm") is None:
        pytest.skip("npm is not on PATH: the pinned Gemini CLI comes from npm")
    try:
        return install_cli("@google/gemini-cli")
    except CliInstallError as exc:
        pytest.fail(str(exc))


@pytest.fixture
def gemini_home(tmp_path: Path) -> tuple[Path, Path, datetime]:
    """A HOME where the real Gemini CLI ran once (``gemini -p FACT``); the HOME, the binary
    and when the run started."""
    from tests.agents.mock_gemini_openai_chat import MockModelServer

    binary = _gemini_bin()
    home = tmp_path / "home"
    project = tmp_path / "acme-api"
    (project / ".git").mkdir(parents=True)
    own = home / ".gemini"
    own.mkdir(parents=True, mode=0o700)
    (own / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}})
    )
    # Gemini CLI refuses to run headless in a folder the person has not trusted.
    (own / "trustedFolders.json").write_text(json.dumps({str(project.resolve()): TRUST_FOLDER}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_"))}
    server = MockModelServer().start()
    try:
        started = datetime.now(UTC)
        run = subprocess.run(
            [str(binary), "-p", FACT],
            cwd=project,
            env=env
            | {
                "HOME": str(home),
                "GOOGLE_GEMINI_BASE_URL": server.url,
                "GEMINI_API_KEY": "test-key-not-a-secret",
                "NO_COLOR": "1",
            },
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    finally:
        server.stop()
    assert run.returncode == 0, run.stderr[-2000:]
    return home, binary, started


def _setup(tmp_path: Path, gemini_home: tuple[Path, Path, datetime], accept: bool) -> str:
    """``nika setup`` on a pty for tenant acme, the offer answered; what it printed."""
    home, binary, _started = gemini_home
    said = run_setup(tmp_path, home, AgentCli.GEMINI_CLI, binary, "acme", OFFER, accept)
    # The agent question's default was the CLI found on PATH: Gemini CLI, detected.
    assert load_tenant("acme").agent_cli is AgentCli.GEMINI_CLI
    return said


def test_yes_to_the_offer_puts_the_gemini_session_in_the_tenant(
    tmp_path: Path,
    gemini_home: tuple[Path, Path, datetime],
    running_service: RunningService,
    redis_client: redis.Redis,
) -> None:
    began = datetime.now(UTC)
    said = _setup(tmp_path, gemini_home, accept=True)
    assert "1 sessions" in said and "0 skipped" in said and "queued " in said, said

    def imported() -> Any:
        found = running_service.client.recall(
            RecallQuery(tenant_id="acme", query="when does the invoicing cron run", limit=10)
        )
        return next((h.record for h in found.hits if "quokka-7" in h.record.text), None)

    fact = retry_until(imported, timeout=120, interval=0.2, what="the imported fact recalled")
    assert fact.layer is Layer.SEMANTIC
    assert fact.meta.agent_type == "gemini"
    # NIKA_META names the session line holding the fact, and its time is the valid time: the
    # session's own, before the setup began.
    path, line = fact.meta.source.rsplit(":", 1)
    assert Path(path).is_relative_to(gemini_home[0] / ".gemini" / "tmp")
    raw = Path(path).read_text(encoding="utf-8").splitlines()[int(line) - 1]
    assert "quokka-7" in raw
    at = parse_time(json.loads(raw)["timestamp"])
    assert fact.valid_from == at
    assert at is not None and gemini_home[2] <= at <= began
    assert redis_client.scard(redis_keys.import_keys("acme")) >= 1


def test_no_to_the_gemini_offer_says_how_later_and_imports_nothing(
    tmp_path: Path, gemini_home: tuple[Path, Path, datetime], redis_client: redis.Redis
) -> None:
    said = _setup(tmp_path, gemini_home, accept=False)  # the tenant is written all the same
    assert "Later: `nika import --tenant acme gemini`" in said, said
    assert redis_client.xlen(redis_keys.INGEST_STREAM) == 0
    assert not redis_client.exists(redis_keys.import_keys("acme"), redis_keys.import_files("acme"))
