"""``nika import`` on sessions the REAL CLIs wrote (claude -p, codex exec, gemini -p; mock models).

The readers are otherwise checked against hand-written fixtures; this pins them to what the
pinned binaries actually write. Each CLI runs once headless with a distinctive fact, then the
session store it wrote is imported into a second tenant (so the live hooks' own memory of the
fact cannot pass for the import's) and the fact must be there with the session's time.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from nika_tui.cli import main
from nika_tui.domain.memory import MemoryRecord
from nika_tui.domain.requests import RecallQuery
from nika_tui.importer.sessions import parse_time
from nika_tui.services.agent_homes import claude_config_dir, codex_home
from nika_tui.services.gemini_settings import gemini_home, install_gemini_hooks
from tests.agents.conftest import AgentTenant

pytestmark = [pytest.mark.agents, pytest.mark.embedder, pytest.mark.slow]

IMPORTED = "imported"
FACT = "Remember this: the invoicing cron runs at 04:17 UTC on the box named quokka-7."


def _import(source: Path) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            ["import", "--tenant", IMPORTED, "--json", "--wait", "--timeout", "120", str(source)]
        )
    assert code == 0, out.getvalue()
    return dict(json.loads(out.getvalue()))


def _imported_fact(client: Any) -> MemoryRecord:
    q = RecallQuery(tenant_id=IMPORTED, query="when does the invoicing cron run", limit=10)
    hits: list[MemoryRecord] = [
        h.record for h in client.recall(q).hits if "quokka-7" in h.record.text
    ]
    assert hits, "the fact typed in the real session was not imported"
    return hits[0]


def _line_time(source: str) -> datetime:
    """The ``timestamp`` of the session line a NIKA_META source (``file:line``) names."""
    path, line = source.rsplit(":", 1)
    raw = Path(path).read_text(encoding="utf-8").splitlines()[int(line) - 1]
    assert "quokka-7" in raw  # the source names the line that holds the fact
    at = parse_time(json.loads(raw).get("timestamp"))
    assert at is not None
    return at


def _check(record: MemoryRecord, before: datetime, after: datetime) -> None:
    at = _line_time(record.meta.source)
    assert record.valid_from == at
    # The session's own time, not the import's: the import ran after the CLI had exited.
    assert before <= at <= after


def test_claude_sessions_import_with_their_real_time(
    claude_bin: Path,
    agent_tenant: Callable[..., AgentTenant],
    running_service: Any,
    make_tenant: Callable[..., Any],
) -> None:
    tenant = agent_tenant(["claude-code"])
    make_tenant(IMPORTED)
    before = datetime.now(UTC)
    run = tenant.claude(claude_bin, FACT)
    after = datetime.now(UTC)
    assert run.returncode == 0, run.stderr

    report = _import(claude_config_dir(tenant.tenant_id) / "projects")
    assert report["sessions"] >= 1 and not report["skipped"], report
    _check(_imported_fact(running_service.client), before, after)


def test_codex_rollouts_import_with_their_real_time(
    codex_bin: Path,
    agent_tenant: Callable[..., AgentTenant],
    running_service: Any,
    make_tenant: Callable[..., Any],
) -> None:
    tenant = agent_tenant(["codex"])
    make_tenant(IMPORTED)
    before = datetime.now(UTC)
    run = tenant.codex(codex_bin, FACT)
    after = datetime.now(UTC)
    assert run.returncode == 0, run.stderr

    report = _import(codex_home(tenant.tenant_id) / "sessions")
    assert report["sessions"] >= 1 and not report["skipped"], report
    _check(_imported_fact(running_service.client), before, after)


def test_gemini_sessions_import_with_their_real_time(
    running_service: Any, make_tenant: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    from tests.agents.cli_install import CliInstallError, install_cli
    from tests.agents.mock_gemini_openai_chat import MockModelServer

    try:
        binary = install_cli("@google/gemini-cli")
    except CliInstallError as exc:
        pytest.skip(f"Gemini CLI not installable here: {exc}")
    make_tenant("acme")
    make_tenant(IMPORTED)
    project = tmp_path / "acme-api"
    (project / ".git").mkdir(parents=True)
    # The same setup as tests/agents/test_gemini_cli.py: API-key login, hooks, the mock server.
    settings = gemini_home("acme") / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, mode=0o700)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    install_gemini_hooks("acme", workdir=project)
    server = MockModelServer().start()
    try:
        env = {
            **os.environ,
            "NIKA_TENANT_ID": "acme",
            "REDIS_URL": redis_url,
            "GEMINI_CLI_HOME": str(gemini_home("acme")),
            "GOOGLE_GEMINI_BASE_URL": server.url,
            "GEMINI_API_KEY": "test-key-not-a-secret",
            "NO_COLOR": "1",
        }
        before = datetime.now(UTC)
        proc = subprocess.run(
            [str(binary), "-p", FACT],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        after = datetime.now(UTC)
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr[-2000:]

    report = _import(gemini_home("acme") / ".gemini" / "tmp")
    assert report["sessions"] >= 1, report
    _check(_imported_fact(running_service.client), before, after)
