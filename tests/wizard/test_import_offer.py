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
from tests.importer.sessions_on_disk import claude_session, codex_rollout

TURNS = [
    ("Deploys happen on Tuesdays after standup.", "Scheduled the release pipeline for Tuesdays.")
]


def offer(keys: str, home: Path, cli: AgentCli = AgentCli.CLAUDE_CODE) -> tuple[bool, str]:
    # prompt_toolkit is imported here, not at the top: collection stays light (issue 12)
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    out = io.StringIO()
    with create_pipe_input() as inp:
        inp.send_text(keys)
        watchdog = threading.Timer(30.0, inp.close)
        watchdog.daemon = True
        watchdog.start()
        try:
            ran = offer_import(Prompter(inp, DummyOutput()), out, "acme", cli, {"HOME": str(home)})
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
