"""The wizard offers to import the detected CLI's sessions (real questionary prompts)."""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis

from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import AgentCli
from nika_tui.wizard.import_offer import offer_import
from nika_tui.wizard.prompts import Prompter
from tests.importer.sessions_on_disk import claude_session, codex_rollout, opencode_db

# 2 memories: the prompt, a fact and nothing else (semantic), and the answer (episodic; it
# only reports what the agent did, so nothing of it is semantic).
TURNS = [
    ("Deploys happen on Tuesdays after standup.", "Scheduled the release pipeline for Tuesdays.")
]


def offer(
    keys: str, home: Path, cli: AgentCli = AgentCli.CLAUDE_CODE, screen: io.StringIO | None = None
) -> tuple[bool, str]:
    """Run the offer with ``keys`` typed; (ran, what it wrote). ``screen`` gets the prompt."""
    # prompt_toolkit is imported here, not at the top: collection stays light (issue 12)
    from prompt_toolkit.data_structures import Size
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput
    from prompt_toolkit.output.vt100 import Vt100_Output

    shown = (
        DummyOutput()
        if screen is None
        else Vt100_Output(screen, lambda: Size(rows=24, columns=400), enable_cpr=False)
    )
    out = io.StringIO()
    with create_pipe_input() as inp:
        inp.send_text(keys)
        watchdog = threading.Timer(30.0, inp.close)
        watchdog.daemon = True
        watchdog.start()
        try:
            ran = offer_import(Prompter(inp, shown), out, "acme", cli, {"HOME": str(home)})
        finally:
            watchdog.cancel()
    return ran, out.getvalue()


def test_yes_imports_the_sessions_no_says_how_later(
    tmp_path: Path, make_tenant: Callable[..., Any], redis_client: redis.Redis
) -> None:
    make_tenant("acme")
    claude_session(
        tmp_path / ".claude" / "projects", "s1", "/w/acme", datetime(2026, 3, 1, tzinfo=UTC), TURNS
    )
    ran, said = offer("n\r", tmp_path)
    assert not ran and "nika import --tenant acme claude" in said
    assert redis_client.xlen("nika:ingest") == 0
    ran, _ = offer("y\r", tmp_path)
    assert ran and redis_client.xlen("nika:ingest") == 2


def test_no_offer_without_sessions_on_disk(tmp_path: Path, redis_url: str) -> None:
    ran, said = offer("", tmp_path, AgentCli.CODEX)
    assert not ran and said == ""
    ran, said = offer("", tmp_path, AgentCli.SHELL)
    assert not ran


def test_a_codex_tenant_is_offered_its_codex_store_only(
    tmp_path: Path,
    make_tenant: Callable[..., Any],
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_tenant("acme")
    for var in ("CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(var, raising=False)
    at = datetime(2026, 3, 1, tzinfo=UTC)
    rollout = codex_rollout(tmp_path / ".codex" / "sessions" / "2026", "x-1", "/w/acme", at, TURNS)
    # Another CLI's store on the same HOME (maybe another tenant's work) is not offered.
    claude_session(tmp_path / ".claude" / "projects", "s1", "/w/acme", at, TURNS)

    ran, said = offer("n\r", tmp_path, AgentCli.CODEX)
    assert not ran and "nika import --tenant acme codex" in said
    ran, _ = offer("y\r", tmp_path, AgentCli.CODEX)
    assert ran
    queued = [
        RememberRequest.model_validate_json(f["req"])
        for _id, f in redis_client.xrange("nika:ingest")
    ]
    assert len(queued) == 2
    assert {r.meta.source.rsplit(":", 1)[0] for r in queued} == {str(rollout.resolve())}


def test_an_opencode_tenant_is_offered_its_sessions_not_its_database_file(
    tmp_path: Path, make_tenant: Callable[..., Any], redis_client: redis.Redis
) -> None:
    make_tenant("acme")
    data = tmp_path / ".local" / "share" / "opencode"
    at = datetime(2026, 3, 1, tzinfo=UTC)
    sessions = [(f"ses_aaaaaa{n}11111", "/w/acme", at, TURNS) for n in range(3)]
    # Three sessions and a sub-agent's, all in one opencode.db: three sessions are offered.
    opencode_db(data, [*sessions, ("ses_child0999999", "/w/acme", at, TURNS)], "ses_aaaaaa011111")
    screen = io.StringIO()
    ran, said = offer("n\r", tmp_path, AgentCli.OPENCODE, screen)
    assert not ran and "nika import --tenant acme opencode" in said
    assert "Import your 3 existing OpenCode sessions into 'acme'?" in screen.getvalue()
    assert redis_client.xlen("nika:ingest") == 0


def test_an_empty_opencode_database_is_not_offered(tmp_path: Path, redis_url: str) -> None:
    opencode_db(tmp_path / ".local" / "share" / "opencode", [])  # OpenCode started, never used
    ran, said = offer("", tmp_path, AgentCli.OPENCODE)
    assert not ran and said == ""
